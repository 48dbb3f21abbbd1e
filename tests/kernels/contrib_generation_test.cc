// com.microsoft GreedySearch and BeamSearch over a decoder whose next-token
// logits depend on the last token only (a transition table), so that the
// searches' answers can be worked out by hand. scripts/contrib_cases/generation.py
// compares both ops with ONNX Runtime on a small GPT-2-like decoder.
#include <cmath>

#include "session_test_util.h"

namespace onyx::test {
namespace {

constexpr int64_t kVocab = 5;
constexpr float kTiny = 1e-6f;  // the probability of every transition not listed

// Token 0 -> 1 (0.6) or 2 (0.4); 1 -> 3 or 4 (0.5 each); 2 -> 3 (0.9) or 4 (0.1); 3 and 4 -> 0.
std::vector<float> transition_logits() {
  std::vector<float> p(kVocab * kVocab, kTiny);
  auto set = [&](int from, int to, float prob) { p[from * kVocab + to] = prob; };
  set(0, 1, 0.6f), set(0, 2, 0.4f), set(1, 3, 0.5f), set(1, 4, 0.5f), set(2, 3, 0.9f), set(2, 4, 0.1f);
  set(3, 0, 1.f), set(4, 0, 1.f);
  for (auto& x : p) x = std::log(x);
  return p;
}

// The decoder subgraph: logits = table[input_ids]; present_0 = past_0 with
// the ids (as floats) appended along the sequence axis.
onnx::GraphProto transition_decoder() {
  onnx::GraphProto g;
  g.set_name("decoder");
  *g.add_input() = tensor_info("input_ids", onnx::TensorProto::INT32, {-1, -1}, {"B", "S"});
  *g.add_input() = tensor_info("position_ids", onnx::TensorProto::INT32, {-1, -1}, {"B", "S"});
  *g.add_input() = tensor_info("attention_mask", onnx::TensorProto::INT32, {-1, -1}, {"B", "T"});
  *g.add_input() = tensor_info("past_0", onnx::TensorProto::FLOAT, {2, -1, 1, -1, 1}, {"", "B", "", "P"});
  *g.add_output() = tensor_info("logits", onnx::TensorProto::FLOAT, {-1, -1, kVocab}, {"B", "S"});
  *g.add_output() = tensor_info("present_0", onnx::TensorProto::FLOAT, {2, -1, 1, -1, 1}, {"", "B", "", "T"});
  *g.add_initializer() = float_tensor("table", {kVocab, kVocab}, transition_logits());
  *g.add_initializer() = int64_tensor("axes", {3}, {0, 2, 4});
  add_node(&g, "Gather", {"table", "input_ids"}, {"logits"});
  add_int_attr(add_node(&g, "Cast", {"input_ids"}, {"ids_f"}), "to", onnx::TensorProto::FLOAT);
  add_node(&g, "Unsqueeze", {"ids_f", "axes"}, {"kv1"});
  add_int_attr(add_node(&g, "Concat", {"kv1", "kv1"}, {"kv"}), "axis", 0);
  add_int_attr(add_node(&g, "Concat", {"past_0", "kv"}, {"present_0"}), "axis", 3);
  return g;
}

onnx::TensorProto i32(const std::string& name, int32_t v) {
  return int_tensor(name, onnx::TensorProto::INT32, {1}, {v});
}

// One search node over the transition decoder; `scalars` are its int32 inputs after input_ids.
onnx::ModelProto search_model(const std::string& op, const std::vector<std::pair<std::string, int32_t>>& scalars,
                              int64_t eos, int64_t pad, int64_t max_length_override = 0) {
  onnx::ModelProto m = make_model();
  auto* ms = m.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("input_ids", onnx::TensorProto::INT32, {-1, -1}, {"B", "S"});
  std::vector<std::string> inputs{"input_ids"};
  for (auto& [name, v] : scalars) {
    *g->add_initializer() = i32(name, v);
    inputs.push_back(name);
  }
  if (op == "BeamSearch") {
    *g->add_initializer() = float_tensor("length_penalty", {1}, {1.f});
    inputs.push_back("length_penalty");
  }
  std::vector<std::string> outputs{"sequences"};
  if (op == "BeamSearch") outputs.push_back("sequences_scores");
  auto* n = add_node(g, op, inputs, outputs, "search");
  n->set_domain("com.microsoft");
  add_int_attr(n, "eos_token_id", eos);
  add_int_attr(n, "pad_token_id", pad);
  auto* a = n->add_attribute();
  a->set_name("decoder");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = transition_decoder();
  *g->add_output() = tensor_info("sequences", onnx::TensorProto::INT32, {});
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  if (op == "BeamSearch") {
    *g->add_output() = tensor_info("sequences_scores", onnx::TensorProto::FLOAT, {});
    g->mutable_output(1)->mutable_type()->mutable_tensor_type()->clear_shape();
  }
  return m;
}

std::vector<int32_t> ints(const Value& v) {
  const Tensor& t = v.tensor();
  return std::vector<int32_t>(t.data<int32_t>(), t.data<int32_t>() + t.numel());
}

Value prompt(std::vector<int32_t> ids) {
  const int64_t n = static_cast<int64_t>(ids.size());
  return Value(Tensor::from_vector<int32_t>(ids, {1, n}));
}

TEST(ContribGeneration, GreedySearchFollowsTheLikeliestTransition) {
  // 0 -> 1 (0.6 beats 0.4) -> 3 (first of the tied 3 and 4) -> 0 -> 1; EOS 9 never comes.
  auto s = load(search_model("GreedySearch", {{"max_length", 6}}, 9, 4));
  auto out = s->run({{"input_ids", prompt({0})}});
  EXPECT_EQ(out[0].tensor().shape(), (Shape{1, 6}));
  EXPECT_EQ(ints(out[0]), (std::vector<int32_t>{0, 1, 3, 0, 1, 3}));
}

TEST(ContribGeneration, GreedySearchWritesPadFromEos) {
  // EOS 3 ends the row after 0 1; ORT writes the EOS itself as pad, and the tail is pad too.
  auto s = load(search_model("GreedySearch", {{"max_length", 6}}, 3, 4));
  EXPECT_EQ(ints(s->run({{"input_ids", prompt({0})}})[0]), (std::vector<int32_t>{0, 1, 4, 4, 4, 4}));
}

TEST(ContribGeneration, BeamSearchFindsTheBetterPathGreedyMisses) {
  // Two steps from 0: greedy's 0 1 3 has probability 0.3, 0 2 3 has 0.36; two beams find it.
  auto s = load(search_model("BeamSearch", {{"max_length", 3}, {"min_length", 0}, {"num_beams", 2},
                                            {"num_return_sequences", 2}},
                             9, 4));
  auto out = s->run({{"input_ids", prompt({0})}});
  EXPECT_EQ(out[0].tensor().shape(), (Shape{1, 2, 3}));
  // Second best: 0 1 3 and 0 1 4 tie at 0.3; the first found (3, the lower token) stays ahead.
  EXPECT_EQ(ints(out[0]), (std::vector<int32_t>{0, 2, 3, 0, 1, 3}));
  // Scores: the summed log-probabilities over the length (3 tokens, length_penalty 1).
  const float* scores = out[1].tensor().data<float>();
  EXPECT_NEAR(scores[0], std::log(0.4f * 0.9f) / 3, 1e-4);
  EXPECT_NEAR(scores[1], std::log(0.6f * 0.5f) / 3, 1e-4);
}

// WhisperBeamSearch's pair over the same transition table: the encoder
// (features, forced ids in) gives the table rows of the ids as logits, the ids
// as self-attention states and the features as cross-attention states; the
// decoder gives the next token's row and appends it to the self states.
onnx::GraphProto whisper_encoder() {
  onnx::GraphProto g;
  g.set_name("encoder");
  *g.add_input() = tensor_info("encoder_input_ids", onnx::TensorProto::FLOAT, {-1, 2, 3}, {"B"});
  *g.add_input() = tensor_info("decoder_input_ids", onnx::TensorProto::INT32, {-1, -1}, {"B", "L"});
  *g.add_output() = tensor_info("logits", onnx::TensorProto::FLOAT, {-1, -1, kVocab}, {"B", "L"});
  *g.add_output() = tensor_info("encoder_hidden_states", onnx::TensorProto::FLOAT, {-1, 3, 2}, {"B"});
  for (const char* name : {"present_key_self_0", "present_value_self_0"})
    *g.add_output() = tensor_info(name, onnx::TensorProto::FLOAT, {-1, 1, -1, 1}, {"B", "", "L"});
  for (const char* name : {"present_key_cross_0", "present_value_cross_0"})
    *g.add_output() = tensor_info(name, onnx::TensorProto::FLOAT, {-1, 1, 3, 2}, {"B"});
  *g.add_initializer() = float_tensor("table", {kVocab, kVocab}, transition_logits());
  *g.add_initializer() = int64_tensor("axes13", {2}, {1, 3});
  *g.add_initializer() = int64_tensor("axis1", {1}, {1});
  add_node(&g, "Gather", {"table", "decoder_input_ids"}, {"logits"});
  add_int_attr(add_node(&g, "Cast", {"decoder_input_ids"}, {"ids_f"}), "to", onnx::TensorProto::FLOAT);
  add_node(&g, "Unsqueeze", {"ids_f", "axes13"}, {"present_key_self_0"});
  add_node(&g, "Identity", {"present_key_self_0"}, {"present_value_self_0"});
  auto* t = add_node(&g, "Transpose", {"encoder_input_ids"}, {"encoder_hidden_states"});
  auto* perm = t->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : {0, 2, 1}) perm->add_ints(v);
  add_node(&g, "Unsqueeze", {"encoder_hidden_states", "axis1"}, {"present_key_cross_0"});
  add_node(&g, "Identity", {"present_key_cross_0"}, {"present_value_cross_0"});
  return g;
}

onnx::GraphProto whisper_decoder() {
  onnx::GraphProto g;
  g.set_name("decoder");
  *g.add_input() = tensor_info("input_ids", onnx::TensorProto::INT32, {-1, 1}, {"B"});
  *g.add_input() = tensor_info("encoder_hidden_states", onnx::TensorProto::FLOAT, {-1, 3, 2}, {"B"});
  for (const char* name : {"past_key_self_0", "past_value_self_0"})
    *g.add_input() = tensor_info(name, onnx::TensorProto::FLOAT, {-1, 1, -1, 1}, {"B", "", "P"});
  for (const char* name : {"past_key_cross_0", "past_value_cross_0"})
    *g.add_input() = tensor_info(name, onnx::TensorProto::FLOAT, {-1, 1, 3, 2}, {"B"});
  *g.add_output() = tensor_info("logits", onnx::TensorProto::FLOAT, {-1, 1, kVocab}, {"B"});
  for (const char* name : {"present_key_self_0", "present_value_self_0"})
    *g.add_output() = tensor_info(name, onnx::TensorProto::FLOAT, {-1, 1, -1, 1}, {"B", "", "T"});
  *g.add_initializer() = float_tensor("table", {kVocab, kVocab}, transition_logits());
  *g.add_initializer() = int64_tensor("axes13", {2}, {1, 3});
  add_node(&g, "Gather", {"table", "input_ids"}, {"logits"});
  add_int_attr(add_node(&g, "Cast", {"input_ids"}, {"ids_f"}), "to", onnx::TensorProto::FLOAT);
  add_node(&g, "Unsqueeze", {"ids_f", "axes13"}, {"kv"});
  add_int_attr(add_node(&g, "Concat", {"past_key_self_0", "kv"}, {"present_key_self_0"}), "axis", 2);
  add_int_attr(add_node(&g, "Concat", {"past_value_self_0", "kv"}, {"present_value_self_0"}), "axis", 2);
  return g;
}

// A WhisperBeamSearch node: 2 beams, both returned, forced decoder ids fed as `decoder_input_ids`.
// With `logits_processor` >= 0 that input is given too.
onnx::ModelProto whisper_model(int32_t max_length, int64_t start_token, int32_t logits_processor = -1) {
  onnx::ModelProto m = make_model();
  auto* ms = m.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("input_features", onnx::TensorProto::FLOAT, {-1, 2, 3}, {"B"});
  *g->add_input() = tensor_info("decoder_input_ids", onnx::TensorProto::INT32, {-1, -1}, {"B", "L"});
  *g->add_initializer() = i32("max_length", max_length);
  *g->add_initializer() = i32("num_beams", 2);
  *g->add_initializer() = i32("num_return_sequences", 2);
  std::vector<std::string> inputs{"input_features", "max_length", "", "num_beams", "num_return_sequences", "", "", "",
                                  "", "", "decoder_input_ids"};
  if (logits_processor >= 0) {
    *g->add_initializer() = i32("logits_processor", logits_processor);
    inputs.push_back("logits_processor");
  }
  auto* n = add_node(g, "WhisperBeamSearch", inputs, {"sequences", "sequences_scores"}, "whisper");
  n->set_domain("com.microsoft");
  add_int_attr(n, "eos_token_id", 9);
  add_int_attr(n, "pad_token_id", 4);
  add_int_attr(n, "decoder_start_token_id", start_token);
  for (auto [name, graph] : {std::pair{"encoder", whisper_encoder()}, std::pair{"decoder", whisper_decoder()}}) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = graph;
  }
  for (const char* name : {"sequences", "sequences_scores"}) {
    *g->add_output() = tensor_info(name, onnx::TensorProto::INT32, {});
    g->mutable_output(g->output_size() - 1)->mutable_type()->mutable_tensor_type()->clear_shape();
  }
  g->mutable_output(1)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return m;
}

TEST(ContribGeneration, WhisperBeamSearchContinuesTheForcedIds) {
  // Forced ids 4 0: the encoder's last logits row is 0's, so two steps give 0 2 3 (0.36)
  // and 0 1 3 (0.3) after the prefix; the scores divide by the whole length, 4.
  auto s = load(whisper_model(4, 4));
  Value features(Tensor::from_vector<float>({0.5f, -1.f, 2.f, 0.f, 1.f, 3.f}, {1, 2, 3}));
  Value forced(Tensor::from_vector<int32_t>({4, 0}, {1, 2}));
  auto out = s->run({{"input_features", features}, {"decoder_input_ids", forced}});
  EXPECT_EQ(out[0].tensor().shape(), (Shape{1, 2, 4}));
  EXPECT_EQ(ints(out[0]), (std::vector<int32_t>{4, 0, 2, 3, 4, 0, 1, 3}));
  const float* scores = out[1].tensor().data<float>();
  EXPECT_NEAR(scores[0], std::log(0.4f * 0.9f) / 4, 1e-4);
  EXPECT_NEAR(scores[1], std::log(0.6f * 0.5f) / 4, 1e-4);
}

TEST(ContribGeneration, WhisperBeamSearchBadInputsGiveClearErrors) {
  auto s = load(whisper_model(3, 4));
  Value features(Tensor::from_vector<float>({0.5f, -1.f, 2.f, 0.f, 1.f, 3.f}, {1, 2, 3}));
  // Two forced ids leave no room for a decoder step below max_length 3.
  Error short_max = error_of([&] {
    s->run({{"input_features", features}, {"decoder_input_ids", Value(Tensor::from_vector<int32_t>({4, 0}, {1, 2}))}});
  });
  EXPECT_NE(std::string(short_max.what()).find("max_length must be at least 4"), std::string::npos)
      << short_max.what();
  Error batch = error_of([&] {
    s->run({{"input_features", features}, {"decoder_input_ids", Value(Tensor::from_vector<int32_t>({4, 0}, {2, 1}))}});
  });
  EXPECT_NE(std::string(batch.what()).find("decoder_input_ids must be [batch = 1, n]"), std::string::npos)
      << batch.what();

  // Whisper's timestamp rules need the first timestamp's id.
  auto timestamps = load(whisper_model(6, 4, 1));
  Value start(Tensor::from_vector<int32_t>({4}, {1, 1}));
  Error no_begin = error_of([&] { timestamps->run({{"input_features", features}, {"decoder_input_ids", start}}); });
  EXPECT_NE(std::string(no_begin.what()).find("needs beginning_timestamp_token_id in (0, 5), got -1"),
            std::string::npos)
      << no_begin.what();

  auto m = whisper_model(6, 4);
  auto* node = m.mutable_graph()->mutable_node(0);
  for (const char* name : {"", "", "no_speech_probs"}) node->add_output(name);
  Error no_speech = error_of([&] { load(m); });
  EXPECT_NE(std::string(no_speech.what()).find("no_speech_probs output is not supported"), std::string::npos)
      << no_speech.what();
  EXPECT_NE(std::string(no_speech.what()).find("whisper"), std::string::npos) << no_speech.what();
}

TEST(ContribGeneration, BadInputsGiveClearErrors) {
  auto s = load(search_model("GreedySearch", {{"max_length", 2}}, 9, 4));
  Error e = error_of([&] { s->run({{"input_ids", prompt({0, 1, 2})}}); });
  EXPECT_NE(std::string(e.what()).find("max_length (2) must be greater than the input sequence length (3)"),
            std::string::npos)
      << e.what();

  auto m = search_model("GreedySearch", {{"max_length", 6}}, 9, 4);
  auto* dec = m.mutable_graph()->mutable_node(0)->mutable_attribute(2)->mutable_g();
  dec->mutable_input(1)->set_name("positions");
  Error bad = error_of([&] { load(m); });
  EXPECT_NE(std::string(bad.what()).find("input 1 must be named position_ids, got 'positions'"), std::string::npos)
      << bad.what();

  auto no_decoder = search_model("GreedySearch", {{"max_length", 6}}, 9, 4);
  no_decoder.mutable_graph()->mutable_node(0)->mutable_attribute()->RemoveLast();
  Error missing = error_of([&] { load(no_decoder); });
  EXPECT_NE(std::string(missing.what()).find("'decoder' subgraph attribute is required"), std::string::npos)
      << missing.what();
}

}  // namespace
}  // namespace onyx::test
