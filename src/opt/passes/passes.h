// Factories of every optimizer pass; pipeline.cc orders them per level.
#pragma once
#include <memory>

#include "opt/graph_view.h"
#include "opt/pass.h"

namespace onyx {

// basic
std::unique_ptr<GraphPass> make_float16_in_float();
std::unique_ptr<GraphPass> make_constant_folding();
std::unique_ptr<GraphPass> make_dead_code_elimination();
std::unique_ptr<GraphPass> make_identity_elimination();
std::unique_ptr<GraphPass> make_redundant_node_elimination();
std::unique_ptr<GraphPass> make_common_subexpression_elimination();
std::unique_ptr<GraphPass> make_shape_folding();
std::unique_ptr<GraphPass> make_pad_fusion();
std::unique_ptr<GraphPass> make_conv_dead_taps();
// extended
std::unique_ptr<GraphPass> make_contrib_canonicalization();
std::unique_ptr<GraphPass> make_qdq_fusion();
std::unique_ptr<GraphPass> make_lookup_table_fusion();
std::unique_ptr<GraphPass> make_dynamic_quant_matmul_fusion();
std::unique_ptr<GraphPass> make_conv_batchnorm_fusion();
std::unique_ptr<GraphPass> make_conv_add_fusion();
std::unique_ptr<GraphPass> make_parallel_conv_merge();
std::unique_ptr<GraphPass> make_conv_activation_fusion();
std::unique_ptr<GraphPass> make_matmul_add_fusion();
std::unique_ptr<GraphPass> make_matmul_batchnorm_fusion();
std::unique_ptr<GraphPass> make_gelu_fusion();
std::unique_ptr<GraphPass> make_hard_sigmoid_fusion();
std::unique_ptr<GraphPass> make_layer_norm_fusion();
std::unique_ptr<GraphPass> make_rms_norm_fusion();
std::unique_ptr<GraphPass> make_skip_layer_norm_fusion();
std::unique_ptr<GraphPass> make_attention_fusion();
std::unique_ptr<GraphPass> make_sdpa_fusion();
std::unique_ptr<GraphPass> make_spatial_mean_to_pool();
// all
std::unique_ptr<GraphPass> make_depthwise_multiplier();
std::unique_ptr<GraphPass> make_nchwc_layout();
std::unique_ptr<GraphPass> make_int8_channels_last();
std::unique_ptr<GraphPass> make_pointwise_depthwise_fusion();

}  // namespace onyx
