#include "op_test_util.h"

namespace onyx::test {
namespace {

Tensor strs(std::vector<std::string> v, Shape s = {}) {
  if (s.empty()) s = {static_cast<int64_t>(v.size())};
  return Tensor::from_vector<std::string>(v, s);
}
TEST(StringOps, StringNormalizer) {
  auto y = run_op(make_node("StringNormalizer", {"x"}, {"y"},
                            {{"case_change_action", attr_string("UPPER")}, {"stopwords", attr_strings({"monday"})}}),
                  {strs({"Monday", "tuesday", "Ünter"}, {1, 3})}, 10);
  EXPECT_EQ(y[0].shape(), (Shape{1, 2}));
  EXPECT_EQ(to_vector<std::string>(y[0]), (std::vector<std::string>{"TUESDAY", "ÜNTER"}));
  auto lower = run_op(make_node("StringNormalizer", {"x"}, {"y"}, {{"case_change_action", attr_string("LOWER")}}),
                      {strs({"ÀbC"})}, 10);
  EXPECT_EQ(to_vector<std::string>(lower[0]), (std::vector<std::string>{"àbc"}));
  // case-sensitive stopword removes everything -> one empty string
  auto empty = run_op(make_node("StringNormalizer", {"x"}, {"y"},
                                {{"is_case_sensitive", attr_int(1)}, {"stopwords", attr_strings({"a"})}}),
                      {strs({"a", "a"})}, 10);
  EXPECT_EQ(empty[0].shape(), (Shape{1}));
  EXPECT_EQ(empty[0].data<std::string>()[0], "");
}

TEST(StringOps, TfIdfVectorizer) {
  // pool: unigrams {2, 3}, bigrams {(2,3)}; output indexes 0,1,2
  auto node = make_node("TfIdfVectorizer", {"x"}, {"y"},
                        {{"min_gram_length", attr_int(1)}, {"max_gram_length", attr_int(2)}, {"max_skip_count", attr_int(1)},
                         {"mode", attr_string("TF")}, {"ngram_counts", attr_ints({0, 2})},
                         {"ngram_indexes", attr_ints({0, 1, 2})}, {"pool_int64s", attr_ints({2, 3, 2, 3})}});
  // x = [2, 5, 3, 2, 3]: unigram 2 x2, 3 x2; bigram (2,3) adjacent once, with skip 1 once
  auto y = run_op(node, {Tensor::from_vector<int64_t>({2, 5, 3, 2, 3}, {5})}, 9);
  EXPECT_EQ(y[0].shape(), (Shape{3}));
  expect_near(y[0], {2, 2, 2});
  auto node2 = node;
  node2.attributes["mode"] = attr_string("IDF");
  node2.attributes["weights"] = attr_floats({0.5f, 1.f, 3.f});
  auto y2 = run_op(node2, {Tensor::from_vector<int32_t>({2, 5, 5, 5}, {2, 2})}, 9);
  EXPECT_EQ(y2[0].shape(), (Shape{2, 3}));
  expect_near(y2[0], {0.5f, 0, 0, 0, 0, 0});
}

TEST(StringOps, ConcatSplitRegex) {
  auto c = run_op(make_node("StringConcat", {"a", "b"}, {"y"}), {strs({"a", "b"}), strs({"!"}, {1})}, 20);
  EXPECT_EQ(to_vector<std::string>(c[0]), (std::vector<std::string>{"a!", "b!"}));
  auto s = run_op(make_node("StringSplit", {"x"}, {"y", "z"}, {{"delimiter", attr_string(",")}}), {strs({"a,b,,c", "d"})}, 20);
  EXPECT_EQ(s[0].shape(), (Shape{2, 4}));
  EXPECT_EQ(to_vector<std::string>(s[0]), (std::vector<std::string>{"a", "b", "", "c", "d", "", "", ""}));
  EXPECT_EQ(to_vector<int64_t>(s[1]), (std::vector<int64_t>{4, 1}));
  auto w = run_op(make_node("StringSplit", {"x"}, {"y", "z"}, {{"maxsplit", attr_int(1)}}), {strs({"  a b  c "})}, 20);
  EXPECT_EQ(to_vector<std::string>(w[0]), (std::vector<std::string>{"a", "b  c "}));
  auto r = run_op(make_node("RegexFullMatch", {"x"}, {"y"}, {{"pattern", attr_string("a+b")}}), {strs({"aab", "aabc"})}, 20);
  EXPECT_EQ(to_vector<bool>(r[0]), (std::vector<bool>{true, false}));
}

TEST(StringOps, Errors) {
  EXPECT_THROW(run_op(make_node("StringNormalizer", {"x"}, {"y"}), {strs({"a", "b"}, {2, 1})}, 10), Error);
  EXPECT_THROW(run_op(make_node("StringNormalizer", {"x"}, {"y"}, {{"case_change_action", attr_string("TITLE")}}),
                      {strs({"a"})}, 10),
               Error);
}

}  // namespace
}  // namespace onyx::test
