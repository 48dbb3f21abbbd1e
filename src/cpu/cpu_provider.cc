#include "cpu/cpu_provider.h"
#include "cpu/kernel_families.h"

namespace onyx {

static KernelRegistry build_cpu_registry() {
  KernelRegistry r;
  register_activation(r);
  register_attention(r);
  register_cast(r);
  register_constant(r);
  register_contrib_fused(r);
  register_contrib_llm(r);
  register_contrib_quantization(r);
  register_contrib_misc(r);
  register_contrib_generation(r);
  register_contrib_vision(r);
  register_contrib_sequence(r);
  register_contrib_word_conv_embedding(r);
  register_contrib_matmul_bnb4(r);
  register_contrib_moe(r);
  register_contrib_sparse_attention(r);
  register_control_flow(r);
  register_conv(r);
  register_data_movement(r);
  register_nchwc_concat(r);
  register_deform_conv(r);
  register_einsum(r);
  register_elementwise(r);
  register_fused(r);
  register_sdp_attention(r);
  register_image_decoder(r);
  register_indexing(r);
  register_linalg(r);
  register_loss(r);
  register_matmul(r);
  register_ml_ops(r);
  register_ml_map_ops(r);
  register_ml_tree_ops(r);
  register_ml_linear_ops(r);
  register_ml_svm_ops(r);
  register_normalization(r);
  register_object_detection(r);
  register_pool(r);
  register_quantization(r);
  register_random(r);
  register_reduction(r);
  register_resize(r);
  register_rnn(r);
  register_sequence(r);
  register_shape_ops(r);
  register_signal(r);
  register_softmax(r);
  register_string_ops(r);
  register_tokenizer(r);
  register_contrib_transformer(r);
  register_training(r);
  register_contrib_aliases(r);  // last: it reuses the kernels above
  return r;
}

const KernelRegistry& cpu_kernel_registry() {
  static const KernelRegistry registry = build_cpu_registry();  // immutable once built
  return registry;
}

}  // namespace onyx
