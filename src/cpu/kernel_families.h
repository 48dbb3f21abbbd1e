// The CPU kernel families, each registering its kernels into the CPU
// registry. Only cpu_provider.cc (and a family calling another) includes this,
// so adding a family rebuilds two files rather than every kernel.
#pragma once
#include "kernels/registry.h"

namespace onyx {

// One function per kernel family (src/cpu/kernels/<family>.cc).
void register_activation(KernelRegistry& r);
void register_attention(KernelRegistry& r);
void register_cast(KernelRegistry& r);
void register_constant(KernelRegistry& r);
void register_contrib_fused(KernelRegistry& r);  // com.microsoft FusedConv/MatMul/Gemm, GELU family
void register_contrib_transformer(KernelRegistry& r);  // ORT's transformer contrib ops (com.microsoft)
void register_contrib_attention(KernelRegistry& r);    // called by register_contrib_transformer
void register_contrib_llm(KernelRegistry& r);  // com.microsoft LLM ops: MatMulNBits, GroupQueryAttention, ...
void register_contrib_quantization(KernelRegistry& r);  // com.microsoft QLinear* / QGemm
void register_contrib_misc(KernelRegistry& r);  // com.microsoft CDist, Inverse, MurmurHash3, Unique, ...
void register_contrib_generation(KernelRegistry& r);  // com.microsoft GreedySearch, BeamSearch
void register_contrib_vision(KernelRegistry& r);  // com.microsoft CropAndResize, MaxpoolWithMask
void register_contrib_sequence(KernelRegistry& r);  // NGramRepeatBlock, BifurcationDetector, DTW, UnfoldTensor
void register_contrib_word_conv_embedding(KernelRegistry& r);  // com.microsoft WordConvEmbedding
void register_contrib_matmul_bnb4(KernelRegistry& r);  // com.microsoft MatMulBnb4 (bitsandbytes FP4 / NF4)
void register_contrib_moe(KernelRegistry& r);  // com.microsoft MoE (mixture of experts)
void register_contrib_sparse_attention(KernelRegistry& r);  // com.microsoft SparseAttention (block-sparse GQA)
void register_control_flow(KernelRegistry& r);
void register_conv(KernelRegistry& r);
void register_data_movement(KernelRegistry& r);
void register_nchwc_concat(KernelRegistry& r);  // com.onyx NchwcConcat
void register_deform_conv(KernelRegistry& r);
void register_einsum(KernelRegistry& r);
void register_elementwise(KernelRegistry& r);
void register_fused(KernelRegistry& r);
void register_sdp_attention(KernelRegistry& r);  // com.onyx ScaledDotProductAttention
void register_image_decoder(KernelRegistry& r);
void register_indexing(KernelRegistry& r);
void register_linalg(KernelRegistry& r);
void register_loss(KernelRegistry& r);
void register_matmul(KernelRegistry& r);
void register_ml_ops(KernelRegistry& r);
void register_ml_map_ops(KernelRegistry& r);   // ZipMap, CastMap, DictVectorizer, CategoryMapper
void register_ml_tree_ops(KernelRegistry& r);  // TreeEnsembleRegressor, TreeEnsembleClassifier
void register_ml_linear_ops(KernelRegistry& r);
void register_ml_svm_ops(KernelRegistry& r);
void register_normalization(KernelRegistry& r);
void register_object_detection(KernelRegistry& r);
void register_pool(KernelRegistry& r);
void register_quantization(KernelRegistry& r);
void register_random(KernelRegistry& r);
void register_reduction(KernelRegistry& r);
void register_resize(KernelRegistry& r);
void register_rnn(KernelRegistry& r);
void register_sequence(KernelRegistry& r);
void register_shape_ops(KernelRegistry& r);
void register_signal(KernelRegistry& r);
void register_softmax(KernelRegistry& r);
void register_string_ops(KernelRegistry& r);
void register_tokenizer(KernelRegistry& r);  // com.microsoft Tokenizer
void register_training(KernelRegistry& r);
// com.microsoft ops that are ONNX ops under another domain or name: registered last.
void register_contrib_aliases(KernelRegistry& r);

}  // namespace onyx
