// 8-bit functions as 256-entry tables. An op whose every output code depends
// only on the code at the same position of one 8-bit tensor x (DQ -> HardSwish
// -> Q, QLinearSigmoid, QLinearMul(x, QLinearSigmoid(x)), ...) is fully
// described by its outputs for the 256 codes x can hold. The optimizer computes
// them by running the op's own nodes on those codes (PassContext::evaluate), so
// com.onyx LookupTable(x, table) gives exactly what the nodes would.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "opt/graph_view.h"
#include "opt/pass.h"

namespace onyx {

// The 256 values of an 8-bit type as a [256] tensor, code i holding the byte i (int8: 0..127,
// then -128..-1), the order LookupTable indexes its table in.
Tensor all_codes(DataType type);

// The only output of `n` run on `inputs` when it is a 256-value 8-bit tensor (the table of
// the function n computes when one input is all_codes(...) and the others one-element
// constants); nullopt when it cannot be evaluated or is anything else.
std::optional<Tensor> evaluate_table(PassContext& ctx, const Node& n, const std::vector<Tensor>& inputs);

// Whether a one-element constant of `rank` dims broadcast against `x` leaves x's shape: it
// has rank 0, or x's rank is known and not smaller.
bool keeps_shape_of(const GraphView& view, const std::string& x, int64_t rank);

// com.onyx LookupTable(x, table) writing y.
Node lookup_table_node(const std::string& name, const std::string& x, const std::string& table,
                       const std::string& y);

}  // namespace onyx
