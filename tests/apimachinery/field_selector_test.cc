#include "kubestat/apimachinery/field_selector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "kubestat/testing/allocation_counter.h"

namespace kubestat {
namespace {

using ::testing::ElementsAre;
using Fields = std::map<std::string, std::string>;

FieldSelector MustParse(std::string_view text) {
  absl::StatusOr<FieldSelector> s = FieldSelector::Parse(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status();
  return s.ok() ? *std::move(s) : FieldSelector();
}

std::string ParseError(std::string_view text) {
  absl::StatusOr<FieldSelector> s = FieldSelector::Parse(text);
  EXPECT_FALSE(s.ok()) << text << " parsed as " << s->String();
  if (s.ok()) return "";
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << text;
  return std::string(s.status().message());
}

std::string UnescapeError(std::string_view text) {
  absl::StatusOr<std::string> v = UnescapeFieldValue(text);
  EXPECT_FALSE(v.ok()) << text << " unescaped to " << *v;
  if (v.ok()) return "";
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << text;
  return std::string(v.status().message());
}

TEST(FieldSelectorTest, ParsesTermsWithEachOperator) {
  FieldSelector s = MustParse("spec.nodeName==node-1,metadata.name!=web-0,metadata.namespace=shop");
  ASSERT_EQ(s.terms().size(), 3u);
  EXPECT_EQ(s.terms()[0], (FieldTerm{"metadata.name", FieldOperator::kNotEquals, "web-0"}));
  EXPECT_EQ(s.terms()[1], (FieldTerm{"metadata.namespace", FieldOperator::kEquals, "shop"}));
  EXPECT_EQ(s.terms()[2], (FieldTerm{"spec.nodeName", FieldOperator::kEquals, "node-1"}));
  EXPECT_EQ(s.String(), "metadata.name!=web-0,metadata.namespace=shop,spec.nodeName=node-1");
}

TEST(FieldSelectorTest, SplitsAtTheFirstOperatorAndKeepsSpaces) {
  EXPECT_EQ(MustParse(" a = b ").terms()[0], (FieldTerm{" a ", FieldOperator::kEquals, " b "}));
  EXPECT_EQ(MustParse("=v").terms()[0], (FieldTerm{"", FieldOperator::kEquals, "v"}));
  EXPECT_EQ(MustParse("a!=").terms()[0], (FieldTerm{"a", FieldOperator::kNotEquals, ""}));
  // "!" alone is part of the field name; "!=" is the operator wherever it comes first.
  EXPECT_EQ(MustParse("a!b=c").terms()[0], (FieldTerm{"a!b", FieldOperator::kEquals, "c"}));
  EXPECT_EQ(ParseError("a=!="), "invalid field selector: unescaped character in value: '='");
}

TEST(FieldSelectorTest, EmptyTermsAreSkipped) {
  EXPECT_TRUE(MustParse("").Empty());
  EXPECT_TRUE(MustParse(",,").Empty());
  EXPECT_EQ(MustParse(",a=b,,c=d,").String(), "a=b,c=d");
}

TEST(FieldSelectorTest, EscapedValuesAreUnescapedAndWrittenBackEscaped) {
  FieldSelector s = MustParse("a=x\\,y\\=z\\\\,b=plain");
  EXPECT_EQ(s.terms()[0].value, "x,y=z\\");
  EXPECT_EQ(s.String(), "a=x\\,y\\=z\\\\,b=plain");
  EXPECT_TRUE(s.Matches(Fields{{"a", "x,y=z\\"}, {"b", "plain"}}));
}

TEST(FieldSelectorTest, ErrorsNameTheSelectorAndTheTerm) {
  EXPECT_EQ(ParseError("x"), "invalid selector: 'x'; can't understand 'x'");
  // Terms are examined in sorted order, so the first bad one in that order is reported.
  EXPECT_EQ(ParseError("z,a=1,y"), "invalid selector: 'z,a=1,y'; can't understand 'y'");
  EXPECT_EQ(ParseError("x==a==b"), "invalid field selector: unescaped character in value: '='");
  EXPECT_EQ(ParseError("x=a\\b"), "invalid field selector: invalid escape sequence: \\b");
  EXPECT_EQ(ParseError("x=a\\"), "invalid field selector: invalid escape sequence: \\");
}

TEST(FieldSelectorTest, ParseErrorsAreCounted) {
  const uint64_t before = FieldSelector::ParseErrorCount();
  EXPECT_FALSE(FieldSelector::Parse("nope").ok());
  EXPECT_FALSE(FieldSelector::Parse("a=\\q").ok());
  EXPECT_TRUE(FieldSelector::Parse("a=b").ok());
  EXPECT_EQ(FieldSelector::ParseErrorCount() - before, 2u);
}

TEST(FieldSelectorTest, MissingFieldComparesAsEmpty) {
  const Fields none;
  EXPECT_TRUE(MustParse("spec.nodeName=").Matches(none));
  EXPECT_FALSE(MustParse("spec.nodeName!=").Matches(none));
  EXPECT_TRUE(MustParse("spec.nodeName!=node-1").Matches(none));
  EXPECT_FALSE(MustParse("spec.nodeName=node-1").Matches(none));
  EXPECT_TRUE(MustParse("spec.nodeName=node-1").Matches(Fields{{"spec.nodeName", "node-1"}}));
  EXPECT_TRUE(FieldSelector().Matches(none));
}

TEST(FieldSelectorTest, MatchesWithALookupFunction) {
  FieldSelector s = MustParse("metadata.name=web-1,metadata.namespace!=kube-system");
  std::vector<std::string> asked;
  EXPECT_TRUE(s.Matches([&](const std::string& field) -> std::string_view {
    asked.push_back(field);
    return field == "metadata.name" ? "web-1" : "shop";
  }));
  EXPECT_THAT(asked, ElementsAre("metadata.name", "metadata.namespace"));
}

TEST(FieldSelectorTest, CheckSupportedNamesTheUnsupportedField) {
  constexpr std::string_view kPodFields[] = {kFieldMetadataName, kFieldMetadataNamespace,
                                             kFieldSpecNodeName};
  EXPECT_TRUE(MustParse("spec.nodeName=n1,metadata.name=a").CheckSupported(kPodFields).ok());
  EXPECT_TRUE(MustParse("").CheckSupported({}).ok());
  absl::Status st = MustParse("metadata.name=a,spec.foo=bar").CheckSupported(kPodFields);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "field label not supported: spec.foo");
  // Nodes have no spec.nodeName.
  absl::Status node =
      MustParse("spec.nodeName=n1").CheckSupported({kFieldMetadataName, kFieldMetadataNamespace});
  EXPECT_EQ(node.message(), "field label not supported: spec.nodeName");
}

TEST(FieldSelectorTest, RequiresExactMatchFindsEqualityTermsOnly) {
  FieldSelector s = MustParse("spec.nodeName=node-7,metadata.name!=x");
  EXPECT_EQ(s.RequiresExactMatch("spec.nodeName"), "node-7");
  EXPECT_EQ(s.RequiresExactMatch("metadata.name"), std::nullopt);
  EXPECT_EQ(s.RequiresExactMatch("metadata.namespace"), std::nullopt);
}

TEST(FieldSelectorTest, CanonicalOrderIsAFixedPointEvenWithDoubleEquals) {
  // Upstream sorts the raw terms ("a==z" < "a=b"); the canonical order sorts the written form.
  FieldSelector s = MustParse("a==z,a=b");
  EXPECT_EQ(s.String(), "a=b,a=z");
  EXPECT_EQ(MustParse(s.String()).String(), "a=b,a=z");
}

TEST(FieldSelectorTest, FromTermsSortsIntoCanonicalOrder) {
  FieldSelector s = FieldSelector::FromTerms(
      {{"b", FieldOperator::kEquals, "1"}, {"a", FieldOperator::kNotEquals, "x,y"}});
  EXPECT_EQ(s.String(), "a!=x\\,y,b=1");
  EXPECT_EQ(s, MustParse("b=1,a!=x\\,y"));
}

TEST(FieldValueEscapeTest, UnescapeRejectsBadSequencesWithUpstreamMessages) {
  EXPECT_EQ(UnescapeError("\\"), "invalid field selector: invalid escape sequence: \\");
  EXPECT_EQ(UnescapeError("a\\n"), "invalid field selector: invalid escape sequence: \\n");
  EXPECT_EQ(UnescapeError("a,b"), "invalid field selector: unescaped character in value: ','");
  EXPECT_EQ(UnescapeError("a=b"), "invalid field selector: unescaped character in value: '='");
  // A multi-byte character after the backslash is reported whole.
  EXPECT_EQ(UnescapeError("\\\xc3\xa9"),
            "invalid field selector: invalid escape sequence: \\\xc3\xa9");
}

TEST(FieldValueEscapeTest, InvalidUtf8BecomesReplacementOnlyWhenUnescaping) {
  EXPECT_EQ(*UnescapeFieldValue("a\xff"), "a\xff");  // nothing to unescape: unchanged
  EXPECT_EQ(*UnescapeFieldValue("\\,\xff"), ",\xEF\xBF\xBD");
  EXPECT_EQ(*UnescapeFieldValue("\\,\xc3\xa9"), ",\xc3\xa9");
  EXPECT_EQ(UnescapeError("\\\xff"),
            "invalid field selector: invalid escape sequence: \\\xEF\xBF\xBD");
}

TEST(FieldValueEscapeTest, RandomValuesRoundTrip) {
  std::mt19937 rng(7);
  const std::vector<std::string> pieces = {"a", "b", "=", ",", "\\", " ", "\t", "!", "\xc3\xa9"};
  for (int round = 0; round < 1000; ++round) {
    std::string value;
    const int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) value += pieces[rng() % pieces.size()];
    absl::StatusOr<std::string> back = UnescapeFieldValue(EscapeFieldValue(value));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, value);
    absl::StatusOr<FieldSelector> s = FieldSelector::Parse("f=" + EscapeFieldValue(value));
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(MustParse(s->String()), *s);
  }
}

TEST(FieldSelectorTest, MatchingDoesNotAllocate) {
  FieldSelector s = MustParse("metadata.name=web-1,metadata.namespace!=kube-system,spec.nodeName=");
  const Fields fields = {{"metadata.name", "web-1"}, {"metadata.namespace", "shop"}};
  bool matched = false;
  int allocations = 0;
  {
    const ::kubestat::testing::CountedAllocations counted;
    for (int i = 0; i < 100; ++i) matched = s.Matches(fields);
    allocations = counted.count();
  }
  EXPECT_TRUE(matched);
  EXPECT_EQ(allocations, 0);
}

}  // namespace
}  // namespace kubestat
