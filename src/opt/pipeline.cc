// The pass order of every optimization level: the one place it lives.
#include "opt/passes/passes.h"

namespace onyx {

std::vector<std::unique_ptr<GraphPass>> passes_for_level(OptimizationLevel level) {
  std::vector<std::unique_ptr<GraphPass>> p;
  if (level == OptimizationLevel::Disable) return p;
  p.push_back(make_float16_in_float());  // first: every pass after it sees float
  p.push_back(make_identity_elimination());
  p.push_back(make_shape_folding());
  // Before constant folding, which would turn the DequantizeLinear of each
  // quantized weight into a float constant and so hide the QDQ groups.
  if (level != OptimizationLevel::Basic) {
    p.push_back(make_qdq_fusion());
    p.push_back(make_lookup_table_fusion());
  }
  p.push_back(make_constant_folding());
  // Again now that Constant nodes are initializers: Gather / Slice of a shape's known dims
  // (dynamic-batch exports) fold, and constant folding takes what they feed.
  p.push_back(make_shape_folding());
  p.push_back(make_constant_folding());
  p.push_back(make_redundant_node_elimination());
  // Batch norms and per-channel constant Mul / Add folded into the conv
  // before them: standard Convs out, so basic as in onnxruntime (a model
  // saved at basic, e.g. by quant_pre_process, keeps no float BatchNorm).
  p.push_back(make_conv_batchnorm_fusion());
  p.push_back(make_conv_add_fusion());
  p.push_back(make_pad_fusion());
  p.push_back(make_conv_dead_taps());
  p.push_back(make_common_subexpression_elimination());
  p.push_back(make_dead_code_elimination());
  if (level == OptimizationLevel::Basic) return p;
  // ORT's fused ops into Onyx's, so the fusions and layout passes below see them.
  p.push_back(make_contrib_canonicalization());
  p.push_back(make_dynamic_quant_matmul_fusion());
  // Attention and layer norms first: they consume MatMul+Add pairs that the
  // generic MatMul+Add fusion would otherwise take.
  p.push_back(make_layer_norm_fusion());
  p.push_back(make_rms_norm_fusion());
  p.push_back(make_attention_fusion());
  p.push_back(make_sdpa_fusion());
  p.push_back(make_skip_layer_norm_fusion());
  p.push_back(make_gelu_fusion());
  p.push_back(make_hard_sigmoid_fusion());
  p.push_back(make_parallel_conv_merge());  // after the branches' batch norms are in their weights
  p.push_back(make_matmul_batchnorm_fusion());
  p.push_back(make_matmul_add_fusion());
  p.push_back(make_conv_activation_fusion());
  p.push_back(make_spatial_mean_to_pool());
  // Level all: channel-last 8-bit and blocked float activation layouts through conv / pool chains.
  if (level == OptimizationLevel::All) {
    p.push_back(make_int8_channels_last());
    p.push_back(make_depthwise_multiplier());
    p.push_back(make_common_subexpression_elimination());  // one repeat for convs that share an input
    p.push_back(make_nchwc_layout());
    p.push_back(make_pointwise_depthwise_fusion());
  }
  p.push_back(make_dead_code_elimination());
  return p;
}

}  // namespace onyx
