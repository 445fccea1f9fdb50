#include "kubestat/apimachinery/quantity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kubestat/testing/fixtures.h"

namespace kubestat {
namespace {

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kMinInt64 = std::numeric_limits<int64_t>::min();

Quantity MustParse(std::string_view text) {
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  EXPECT_TRUE(q.ok()) << text << ": " << q.status();
  return q.ok() ? *q : Quantity();
}

std::string Canonical(std::string_view text) { return MustParse(text).String(); }

// ---------------------------------------------------------------------------------------
// Vectors from ../shared/fixtures, one test case per row.

struct VectorRow {
  int line = 0;          // 1-based line in the file
  std::string input;     // raw field
  std::string expected;  // raw field
  std::string note;
};

std::vector<VectorRow> LoadRows(const std::string& relative) {
  std::vector<VectorRow> rows;
  auto dir = testing::FixturesDir();
  if (!dir) return rows;
  std::ifstream in(*dir / relative, std::ios::binary);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (number == 1) continue;  // header
    if (line.empty()) continue;
    VectorRow row;
    row.line = number;
    const size_t tab1 = line.find('\t');
    const size_t tab2 = tab1 == std::string::npos ? tab1 : line.find('\t', tab1 + 1);
    if (tab1 == std::string::npos || tab2 == std::string::npos) {
      row.input = line;
      row.expected = "<malformed row>";
    } else {
      row.input = line.substr(0, tab1);
      row.expected = line.substr(tab1 + 1, tab2 - tab1 - 1);
      row.note = line.substr(tab2 + 1);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string RowName(const ::testing::TestParamInfo<VectorRow>& info) {
  return "Row" + std::to_string(info.param.line);
}

void PrintTo(const VectorRow& row, std::ostream* os) {
  *os << "line " << row.line << " input \"" << row.input << "\" expected \"" << row.expected
      << "\"";
}

class QuantityVectorTest : public ::testing::TestWithParam<VectorRow> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(QuantityVectorTest);

TEST_P(QuantityVectorTest, ParsesAndPrintsAsKubernetes) {
  const VectorRow& row = GetParam();
  absl::StatusOr<Quantity> q = Quantity::Parse(row.input);
  if (row.expected == "ERROR") {
    ASSERT_FALSE(q.ok()) << "accepted, prints " << q->String() << " (" << row.note << ")";
    EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(q.status().message().find("\"" + row.input + "\""), std::string_view::npos)
        << q.status();
    return;
  }
  ASSERT_TRUE(q.ok()) << q.status() << " (" << row.note << ")";
  EXPECT_EQ(q->String(), row.expected) << row.note;
  // The canonical form reads back as the same value and prints itself.
  absl::StatusOr<Quantity> again = Quantity::Parse(q->String());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *q);
  EXPECT_EQ(again->String(), q->String());
}

INSTANTIATE_TEST_SUITE_P(Upstream, QuantityVectorTest,
                         ::testing::ValuesIn(LoadRows("quantity-vectors.tsv")), RowName);

class QuantityJsonVectorTest : public ::testing::TestWithParam<VectorRow> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(QuantityJsonVectorTest);

TEST_P(QuantityJsonVectorTest, UnmarshalsAsKubernetes) {
  const VectorRow& row = GetParam();
  absl::StatusOr<Quantity> q = ParseQuantityJson(row.input);
  ASSERT_TRUE(q.ok()) << q.status() << " (" << row.note << ")";
  EXPECT_EQ(q->String(), row.expected) << row.note;
}

INSTANTIATE_TEST_SUITE_P(Upstream, QuantityJsonVectorTest,
                         ::testing::ValuesIn(LoadRows("quantity-json-unmarshal-vectors.tsv")),
                         RowName);

TEST(QuantityVectorFilesTest, VectorFilesArePresentAndNonEmpty) {
  KUBESTAT_REQUIRE_FIXTURES();
  EXPECT_GE(LoadRows("quantity-vectors.tsv").size(), 170u);
  EXPECT_GE(LoadRows("quantity-json-unmarshal-vectors.tsv").size(), 9u);
}

// ---------------------------------------------------------------------------------------
// Parsing.

TEST(QuantityParseTest, KeepsTheUsersSpellingWhenAlreadyCanonical) {
  EXPECT_EQ(Canonical("+1"), "+1");
  EXPECT_EQ(Canonical("1."), "1.");
  EXPECT_EQ(Canonical("1E6"), "1E6");
  EXPECT_EQ(Canonical("-1025Mi"), "-1025Mi");
  EXPECT_EQ(Canonical("100.035k"), "100.035k");
  // Not canonical: recomputed.
  EXPECT_EQ(Canonical("+1000"), "1k");
  EXPECT_EQ(Canonical("2048Ki"), "2Mi");
}

TEST(QuantityParseTest, AcceptsTheSameDegenerateFormsAsKubernetes) {
  // Upstream's scanner treats a missing number as zero, on the int64 path only.
  EXPECT_EQ(Canonical("."), "0");
  EXPECT_EQ(Canonical("-"), "0");
  EXPECT_EQ(Canonical("+."), "0");
  EXPECT_EQ(Canonical("m"), "0");
  EXPECT_EQ(Canonical("Ki"), "0");
  EXPECT_EQ(Canonical("Ti"), "0");
  EXPECT_FALSE(Quantity::Parse("Pi").ok());  // needs the arbitrary-precision path
  EXPECT_FALSE(Quantity::Parse(".Ei").ok());
  EXPECT_FALSE(Quantity::Parse("e-10").ok());
}

TEST(QuantityParseTest, RejectsMalformedInputWithQuotedMessage) {
  for (std::string_view bad : {"", "1.1.M", "1+1.0M", "0.1mi", "aoeu", "1i", "-3.01e-", " 1", "1 ",
                               "1e", "1ee3", "1e3Ki", "1e+", "--1", "1,5", "0x10"}) {
    absl::StatusOr<Quantity> q = Quantity::Parse(bad);
    ASSERT_FALSE(q.ok()) << "\"" << bad << "\" parsed as " << q->String();
    EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(q.status().message().find("\"" + std::string(bad) + "\""), std::string_view::npos)
        << q.status();
  }
}

TEST(QuantityParseTest, EscapesAndTruncatesHostileInputInMessages) {
  absl::StatusOr<Quantity> q = Quantity::Parse(std::string_view("1\0\n", 3));
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("\"1\\x00\\n\""), std::string_view::npos) << q.status();
  const std::string huge(10000, 'x');
  q = Quantity::Parse(huge);
  ASSERT_FALSE(q.ok());
  EXPECT_LT(q.status().message().size(), 300u);
  EXPECT_NE(q.status().message().find("10000 bytes"), std::string_view::npos);
}

TEST(QuantityParseTest, CountsEveryFailedParse) {
  const uint64_t before = QuantityParseErrorCount();
  EXPECT_FALSE(Quantity::Parse("nope").ok());
  EXPECT_FALSE(ParseQuantity("1.1.1").ok());
  EXPECT_FALSE(ParseQuantityJson("\"x\"").ok());
  EXPECT_TRUE(Quantity::Parse("1").ok());
  EXPECT_EQ(QuantityParseErrorCount() - before, 3u);
}

TEST(QuantityParseTest, RoundsBelowNanoAwayFromZero) {
  EXPECT_EQ(MustParse("0.9n").AsNanoCores().value(), 1);
  EXPECT_EQ(MustParse("3.001n").AsNanoCores().value(), 4);
  EXPECT_EQ(MustParse("-3.001n").AsNanoCores().value(), -4);
  EXPECT_EQ(Canonical("0.00000012345"), "124n");
  EXPECT_EQ(Canonical("0.5e-9"), "1e-9");
  EXPECT_EQ(Canonical("1e-2000000000"), "1e-9");  // no 10^2000000000 is ever built
  EXPECT_EQ(Canonical("-0.0000000000000000000000001Ei"), "-116n");  // -115.29n
}

TEST(QuantityParseTest, KeepsDecimalValuesBeyondInt64AndCapsBinaryOnes) {
  EXPECT_EQ(Canonical("1E100"), "10e99");
  EXPECT_EQ(Canonical("1000E"), "1e21");  // decimal SI has no suffix above E
  EXPECT_EQ(Canonical("123456789012345678901234567890"), "123456789012345678901234567890");
  EXPECT_EQ(Canonical("123456789012345678901234567890000k"), "123456789012345678901234567890M");
  EXPECT_EQ(Canonical("18446744073709551616"), "18446744073709551616");
  EXPECT_EQ(Canonical("1.2345"), "1234500u");
  EXPECT_EQ(Canonical("8Ei"), "9223372036854775807");
  EXPECT_EQ(Canonical("-8Ei"), "-9223372036854775807");
  EXPECT_EQ(Canonical("100000000000000000000Ki"), "9223372036854775807");
  EXPECT_EQ(Canonical("7Ei"), "7Ei");
  EXPECT_EQ(Canonical("100.035Ki"), "102435840m");
  EXPECT_EQ(Canonical("1.5Gi"), "1536Mi");
  EXPECT_EQ(Canonical("0.5Gi"), "512Mi");
}

TEST(QuantityParseTest, RejectsExponentsThatDoNotFitInt32) {
  EXPECT_EQ(Canonical("1e2147483647"), "10e2147483646");
  EXPECT_EQ(Canonical("1e-2147483648"), "1e-9");
  for (std::string_view bad :
       {"1e2147483648", "1e4294967296", "1e-2147483649", "1e9223372036854775808", "1000e2147483647",
        "10000000000000000000000e2147483647"}) {
    absl::StatusOr<Quantity> q = Quantity::Parse(bad);
    ASSERT_FALSE(q.ok()) << bad << " parsed as " << q->String();
    EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(QuantityParseTest, ParsesVeryLongMantissas) {
  const std::string digits(5000, '7');
  EXPECT_EQ(Canonical(digits), digits);
  EXPECT_EQ(Canonical("0." + digits), "777777778n");
  EXPECT_EQ(Canonical(digits + "Ki"), "9223372036854775807");
}

// ---------------------------------------------------------------------------------------
// JSON.

TEST(QuantityJsonTest, FollowsUnmarshalJson) {
  EXPECT_EQ(ParseQuantityJson("null")->String(), "0");
  EXPECT_EQ(ParseQuantityJson("\"120m\"")->String(), "120m");
  EXPECT_EQ(ParseQuantityJson("\" \t309249Ki\n\"")->String(), "309249Ki");
  EXPECT_EQ(ParseQuantityJson("1.5")->String(), "1500m");
  EXPECT_EQ(ParseQuantityJson("\"\xC2\xA0"
                              "1\xE3\x80\x80\"")
                ->String(),
            "1");  // Unicode spaces
  EXPECT_EQ(ParseQuantityJson("\"null\"").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ParseQuantityJson("\"\\u0031\"").ok());  // escapes are not decoded
  EXPECT_FALSE(ParseQuantityJson("\"").ok());
  EXPECT_FALSE(ParseQuantityJson("\"\"").ok());
  EXPECT_FALSE(ParseQuantityJson("true").ok());
}

// ---------------------------------------------------------------------------------------
// Constructors and formatting.

TEST(QuantityFormatTest, CpuIsDecimalSiAtNanoScale) {
  EXPECT_EQ(Quantity::FromNanoCores(120000000).String(), "120m");
  EXPECT_EQ(Quantity::FromNanoCores(1500000000).String(), "1500m");
  EXPECT_EQ(Quantity::FromNanoCores(2000000000).String(), "2");
  EXPECT_EQ(Quantity::FromNanoCores(1).String(), "1n");
  EXPECT_EQ(Quantity::FromNanoCores(1000).String(), "1u");
  EXPECT_EQ(Quantity::FromNanoCores(123456).String(), "123456n");
  EXPECT_EQ(Quantity::FromNanoCores(-120000000).String(), "-120m");
  EXPECT_EQ(Quantity::FromNanoCores(0).String(), "0");
  EXPECT_EQ(Quantity::FromNanoCores(kMaxInt64).String(), "9223372036854775807n");
  EXPECT_EQ(Quantity::FromNanoCores(kMinInt64).String(), "-9223372036854775808n");
  EXPECT_EQ(Quantity::FromNanoCores(9000000000000000000).String(), "9G");
  EXPECT_EQ(Quantity::FromNanoCores(120000000).format(), QuantityFormat::kDecimalSI);
}

TEST(QuantityFormatTest, MemoryIsBinarySiWhenWholeAndAtLeast1024) {
  // 316669952 bytes are 309248Ki, which is exactly 302Mi.
  EXPECT_EQ(Quantity::FromBytes(316669952).String(), "302Mi");
  EXPECT_EQ(Canonical("309248Ki"), "302Mi");
  EXPECT_EQ(Quantity::FromBytes(316670976).String(), "309249Ki");
  EXPECT_EQ(Quantity::FromBytes(1073741824).String(), "1Gi");
  EXPECT_EQ(Quantity::FromBytes(1024).String(), "1Ki");
  EXPECT_EQ(Quantity::FromBytes(1025).String(), "1025");
  EXPECT_EQ(Quantity::FromBytes(1023).String(), "1023");
  // Under 1024 the value is printed as decimal SI, so 1000 bytes are "1k" in Kubernetes too.
  EXPECT_EQ(Quantity::FromBytes(1000).String(), "1k");
  EXPECT_EQ(Quantity::FromBytes(-1000).String(), "-1k");
  EXPECT_EQ(Quantity::FromBytes(int64_t{1} << 62).String(), "4Ei");
  EXPECT_EQ(Quantity::FromBytes(kMaxInt64).String(), "9223372036854775807");
  // Kubernetes leaves the most negative int64 unfactored (it cannot negate it).
  EXPECT_EQ(Quantity::FromBytes(kMinInt64).String(), "-9223372036854775808");
  EXPECT_EQ(Quantity::FromBytes(-2048).String(), "-2Ki");
  EXPECT_EQ(Quantity::FromBytes(0).String(), "0");
}

TEST(QuantityFormatTest, BareBinaryDigitsReparseAsDecimalSiAsInKubernetes) {
  // CanonicalizeBytes prints a whole binary-SI value that is not a multiple of 1024 as bare
  // digits; bare digits parse as decimal SI, whose canonical form may take a suffix.
  EXPECT_EQ(Canonical("1.953125Ki"), "2000");
  EXPECT_EQ(Canonical("2000"), "2k");
  EXPECT_EQ(Canonical("80095562.5Ki"), "82017856000");
  EXPECT_EQ(Canonical("82017856000"), "82017856k");
  EXPECT_EQ(MustParse("80095562.5Ki"), MustParse("82017856k"));
  EXPECT_EQ(Canonical("1.5Ki"), "1536");
  EXPECT_EQ(Canonical("1536"), "1536");
}

TEST(QuantityFormatTest, MatchesUpstreamConstructorTables) {
  // TestNewSet, TestMilliNewSet and TestNewScaledSet in quantity_test.go.
  EXPECT_EQ(Quantity::FromInt64(1000, QuantityFormat::kDecimalSI).String(), "1k");
  EXPECT_EQ(Quantity::FromInt64(1234000, QuantityFormat::kDecimalSI).String(), "1234k");
  EXPECT_EQ(Quantity::FromInt64(int64_t{1024} * 1024, QuantityFormat::kBinarySI).String(), "1Mi");
  EXPECT_EQ(Quantity::FromInt64(1000000, QuantityFormat::kDecimalExponent).String(), "1e6");
  EXPECT_EQ(Quantity::FromMilli(1).String(), "1m");
  EXPECT_EQ(Quantity::FromMilli(1234000).String(), "1234");
  EXPECT_EQ(Quantity::FromMilli(1024, QuantityFormat::kBinarySI).String(), "1024m");
  EXPECT_EQ(Quantity::FromMilli(int64_t{1024} * 1024, QuantityFormat::kBinarySI).String(),
            "1048576m");
  EXPECT_EQ(Quantity::FromMilli(1000000, QuantityFormat::kDecimalExponent).String(), "1e3");
  EXPECT_EQ(Quantity::FromScaled(1000, -9).String(), "1u");
  EXPECT_EQ(Quantity::FromScaled(1000, -6).String(), "1m");
  EXPECT_EQ(Quantity::FromScaled(1000, -3).String(), "1");
  EXPECT_EQ(Quantity::FromScaled(0, -9).String(), "0");
  EXPECT_EQ(Quantity::FromScaled(1, -12).String(), "1e-12");  // no suffix below n
  EXPECT_EQ(Quantity::FromScaled(kMinInt64, -3).Negated().String(), "9223372036854775808m");
}

// FormatCpuNanoCores/FormatMemoryBytes are separate code: check them against the general
// formatter over many values, and check that their output reads back as the same value.
std::vector<int64_t> SampleValues(uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> values = {
      0,     1,         -1,        999,           1000,       1023,       1024,     1025,
      -1024, kMaxInt64, kMinInt64, kMinInt64 + 1, 1000000000, 1500000000, 316669952};
  std::uniform_int_distribution<int> digits(0, 18);
  std::uniform_int_distribution<int> zeros(0, 18);
  std::uniform_int_distribution<int> shift(0, 62);
  for (int i = 0; i < 20000; ++i) {
    int64_t v = 0;
    switch (i % 5) {
      case 0:  // anything
        v = static_cast<int64_t>(rng());
        break;
      case 1: {  // a few significant digits followed by zeros, as usage often is
        const int n = digits(rng) % 4 + 1;
        v = static_cast<int64_t>(rng() % 10000) % static_cast<int64_t>(std::pow(10, n));
        for (int z = zeros(rng); z > 0 && v < kMaxInt64 / 10; --z) v *= 10;
        break;
      }
      case 2: {  // multiples of powers of two, as memory often is
        const int s = shift(rng);
        v = static_cast<int64_t>(rng() % 2048) << (s > 52 ? 52 : s);
        break;
      }
      case 3:  // small
        v = static_cast<int64_t>(rng() % 5000);
        break;
      default: {  // n digits
        const int n = digits(rng) + 1;
        v = static_cast<int64_t>(rng() % static_cast<uint64_t>(std::pow(10.0, n) - 1) + 1);
        break;
      }
    }
    if (rng() % 4 == 0 && v != kMinInt64) v = -v;
    values.push_back(v);
  }
  return values;
}

TEST(QuantityFormatTest, FormatCpuNanoCoresMatchesGeneralFormatter) {
  for (int64_t v : SampleValues(20261121)) {
    const std::string fast = FormatCpuNanoCores(v);
    ASSERT_EQ(fast, Quantity::FromNanoCores(v).String()) << v;
    absl::StatusOr<Quantity> back = Quantity::Parse(fast);
    ASSERT_TRUE(back.ok()) << fast;
    ASSERT_EQ(back->AsNanoCores().value(), v) << fast;
  }
}

TEST(QuantityFormatTest, FormatMemoryBytesMatchesGeneralFormatter) {
  for (int64_t v : SampleValues(42)) {
    const std::string fast = FormatMemoryBytes(v);
    ASSERT_EQ(fast, Quantity::FromBytes(v).String()) << v;
    absl::StatusOr<Quantity> back = Quantity::Parse(fast);
    ASSERT_TRUE(back.ok()) << fast;
    ASSERT_EQ(back->Value().value(), v) << fast;
  }
}

// ---------------------------------------------------------------------------------------
// Accessors.

TEST(QuantityValueTest, ScaledValueMatchesUpstreamTable) {
  struct Case {
    int32_t from, to;
    int64_t expected;
  };
  for (const Case& c : std::vector<Case>{{-9, -9, 1},
                                         {-9, -6, 1},
                                         {-9, -3, 1},
                                         {-9, 0, 1},
                                         {-6, -9, 1000},
                                         {-6, 0, 1},
                                         {-3, -9, 1000000},
                                         {-3, -6, 1000},
                                         {0, -9, 1000000000},
                                         {0, -3, 1000},
                                         {0, 0, 1},
                                         {2, -2, 10000}}) {
    EXPECT_EQ(Quantity::FromScaled(1, c.from).ScaledValue(c.to).value(), c.expected)
        << c.from << " -> " << c.to;
  }
}

TEST(QuantityValueTest, RoundsAwayFromZero) {
  EXPECT_EQ(MustParse("1.5").Value().value(), 2);
  EXPECT_EQ(MustParse("-1.5").Value().value(), -2);
  EXPECT_EQ(MustParse("1n").Value().value(), 1);
  EXPECT_EQ(MustParse("-1n").Value().value(), -1);
  EXPECT_EQ(MustParse("-0.0005Ki").Value().value(), -1);
  EXPECT_EQ(MustParse("1.0001m").MilliValue().value(), 2);
  EXPECT_EQ(MustParse("120m").AsNanoCores().value(), 120000000);
  EXPECT_EQ(MustParse("1.5Gi").Value().value(), 1610612736);
  EXPECT_EQ(MustParse("1234567890123456789012345678n").Value().value(), 1234567890123456790);
  EXPECT_EQ(MustParse("-1234567890123456789012345678n").Value().value(), -1234567890123456790);
  EXPECT_EQ(MustParse("1E").Value().value(), 1000000000000000000);
  EXPECT_EQ(MustParse("0").Value().value(), 0);
}

TEST(QuantityValueTest, ReportsOverflowInsteadOfWrapping) {
  EXPECT_EQ(MustParse("9223372036854775807").Value().value(), kMaxInt64);
  EXPECT_EQ(MustParse("-9223372036854775808").Value().value(), kMinInt64);
  EXPECT_EQ(MustParse("9223372036854775808").Value().status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(MustParse("-9223372036854775809").Value().status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(MustParse("9223372036854775807").MilliValue().status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(MustParse("10E").Value().status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(MustParse("1E100").Value().status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(MustParse("10G").AsNanoCores().status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(MustParse("9223372036").AsNanoCores().value(), 9223372036000000000);
  EXPECT_EQ(MustParse("9223372036854775807.5").Value().status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(MustParse("9223372036854775806.5").Value().value(), kMaxInt64);
}

TEST(QuantityValueTest, ApproximateDoubleIsTheNearestDouble) {
  EXPECT_DOUBLE_EQ(MustParse("120m").AsApproximateDouble(), 0.12);
  EXPECT_DOUBLE_EQ(MustParse("1.5Gi").AsApproximateDouble(), 1610612736.0);
  EXPECT_DOUBLE_EQ(MustParse("-309248Ki").AsApproximateDouble(), -316669952.0);
  EXPECT_DOUBLE_EQ(MustParse("1E100").AsApproximateDouble(), 1e100);
  EXPECT_DOUBLE_EQ(MustParse("123456789012345678901234567890").AsApproximateDouble(),
                   1.2345678901234568e29);
  EXPECT_EQ(MustParse("1e400").AsApproximateDouble(), HUGE_VAL);
  EXPECT_EQ(MustParse("-1e400").AsApproximateDouble(), -HUGE_VAL);
  EXPECT_EQ(Quantity().AsApproximateDouble(), 0.0);
  // Powers of ten up to 10^22 are exact doubles, beyond the uint64 range.
  EXPECT_EQ(MustParse("3e22").AsApproximateDouble(), 3e22);
  EXPECT_EQ(MustParse(".0001e26").AsApproximateDouble(), 1e22);
  EXPECT_EQ(Quantity::FromScaled(7, -22).AsApproximateDouble(), 7e-22);
  EXPECT_EQ(Quantity::FromScaled(-9, 23).AsApproximateDouble(), -9e23);
}

// ---------------------------------------------------------------------------------------
// Comparison and arithmetic.

TEST(QuantityCompareTest, ComparesValuesAcrossFormatsAndRepresentations) {
  EXPECT_EQ(MustParse("0"), MustParse("0Ki"));
  EXPECT_GT(MustParse("100m"), MustParse("50m"));
  EXPECT_LT(MustParse("50m"), MustParse("100m"));
  EXPECT_GT(MustParse("10000T"), MustParse("100Gi"));
  EXPECT_EQ(MustParse("1Ki"), MustParse("1024"));
  EXPECT_EQ(MustParse("1E"), MustParse("1000000000000000000"));
  EXPECT_EQ(MustParse("1e21"), MustParse("1000E"));
  EXPECT_GT(MustParse("9223372036854775808"), MustParse("9223372036854775807"));
  EXPECT_LT(MustParse("-9223372036854775809"), Quantity::FromBytes(kMinInt64));
  EXPECT_GT(MustParse("1E100"), MustParse("99999999999999999999999999999"));
  EXPECT_LT(MustParse("-1E100"), MustParse("-1e99"));
  EXPECT_GT(MustParse("1n"), Quantity());
  EXPECT_LT(MustParse("-1n"), Quantity::FromScaled(0, 5));
  EXPECT_EQ(Quantity::FromScaled(0, 7), Quantity::FromScaled(0, -3));
  EXPECT_EQ(MustParse("1.5"), Quantity::FromMilli(1500));
  EXPECT_LT(Quantity::FromNanoCores(1), Quantity::FromScaled(1, 30));
  EXPECT_EQ(MustParse("1e2147483647").Compare(MustParse("1e2147483647")), 0);
  EXPECT_LT(MustParse("1e-9"), MustParse("1e2147483647"));
}

TEST(QuantityArithmeticTest, AddsAndSubtractsExactly) {
  EXPECT_EQ(MustParse("100m").Add(MustParse("1"))->String(), "1100m");
  EXPECT_EQ(MustParse("1Gi").Add(MustParse("512Mi"))->String(), "1536Mi");
  EXPECT_EQ(MustParse("10").Sub(MustParse("1e1"))->String(), "0");
  EXPECT_EQ(MustParse("10").Sub(Quantity::FromBytes(1))->String(), "9");
  EXPECT_EQ(Quantity::FromBytes(10).Sub(MustParse("1"))->format(), QuantityFormat::kBinarySI);
  EXPECT_EQ(MustParse("1E100").Add(MustParse("1E100"))->String(), "20e99");
  EXPECT_EQ(MustParse("99999999999999999999").Add(MustParse("1"))->String(), "100E");
  EXPECT_EQ(MustParse("-1.5").Add(MustParse("0.5"))->String(), "-1");
}

TEST(QuantityArithmeticTest, ZeroTakesTheOtherFormatAndKeepsSuffixes) {
  for (std::string_view text : {"100m", "1Gi"}) {
    const Quantity value = MustParse(text);
    EXPECT_EQ(value.Add(MustParse("0"))->String(), text);
    EXPECT_EQ(MustParse("0").Add(value)->String(), text);
    EXPECT_EQ(value.Sub(MustParse("0"))->String(), text);
    EXPECT_EQ(MustParse("0").Sub(value)->String(), "-" + std::string(text));
  }
  EXPECT_EQ(Quantity().Sub(MustParse("50"))->String(), "-50");
}

TEST(QuantityArithmeticTest, GoesPastInt64InsteadOfOverflowing) {
  EXPECT_EQ(Quantity::FromBytes(kMaxInt64).Add(Quantity::FromBytes(1))->String(), "8Ei");
  EXPECT_EQ(Quantity::FromBytes(1).Sub(Quantity::FromBytes(kMinInt64))->String(),
            "9223372036854775809");
  EXPECT_EQ(Quantity().Sub(Quantity::FromInt64(kMinInt64, QuantityFormat::kDecimalSI))->String(),
            "9223372036854775808");
  EXPECT_EQ(Quantity::FromInt64(kMinInt64, QuantityFormat::kDecimalSI).Negated().String(),
            "9223372036854775808");
  EXPECT_EQ(Quantity::FromInt64(kMinInt64, QuantityFormat::kDecimalSI).Negated().Negated(),
            Quantity::FromInt64(kMinInt64, QuantityFormat::kDecimalSI));
  EXPECT_EQ(Quantity::FromNanoCores(kMaxInt64).Add(MustParse("1E"))->String(),
            "1000000009223372036854775807n");
}

TEST(QuantityArithmeticTest, ReportsOutOfRangeForUnrepresentableResults) {
  absl::StatusOr<Quantity> sum = MustParse("1e2000000000").Add(MustParse("1n"));
  EXPECT_EQ(sum.status().code(), absl::StatusCode::kOutOfRange);
  sum = MustParse("9e2147483647").Add(MustParse("1e2147483647"));
  EXPECT_EQ(sum.status().code(), absl::StatusCode::kOutOfRange);
  // Far apart but still representable.
  EXPECT_EQ(MustParse("1e1000").Add(MustParse("1"))->String(), "1" + std::string(999, '0') + "1");
}

// ---------------------------------------------------------------------------------------
// Properties over generated inputs.

TEST(QuantityPropertyTest, CanonicalFormIsAFixedPointThatKeepsTheValue) {
  std::mt19937 rng(7);
  const std::vector<std::string> suffixes = {"",   "n",   "u",  "m",   "k",    "M",   "G",  "T",
                                             "P",  "E",   "Ki", "Mi",  "Gi",   "Ti",  "Pi", "Ei",
                                             "e3", "E-2", "e0", "e+7", "e-12", "e25", "E40"};
  auto digits = [&](int max) {
    std::string s;
    const int n = static_cast<int>(rng() % static_cast<unsigned>(max + 1));
    for (int i = 0; i < n; ++i) s.push_back(static_cast<char>('0' + rng() % 10));
    return s;
  };
  int parsed = 0;
  int reformatted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    switch (rng() % 3) {
      case 0:
        text += '-';
        break;
      case 1:
        if (rng() % 4 == 0) text += '+';
        break;
      default:
        break;
    }
    if (i % 20 == 3) {
      // n * 1000 bytes in Ki: n * 125 / 128, exact in seven decimals (bare digits when printed).
      const uint64_t scaled = (1 + rng() % 1000000) * 125 * 78125;
      const std::string fraction = std::to_string(scaled % 10000000);
      text += std::to_string(scaled / 10000000) + "." + std::string(7 - fraction.size(), '0') +
              fraction + "Ki";
    } else {
      text += digits(i % 10 == 0 ? 30 : 8);
      if (rng() % 2 == 0) text += "." + digits(i % 10 == 1 ? 30 : 6);
      text += suffixes[rng() % suffixes.size()];
    }
    absl::StatusOr<Quantity> q = Quantity::Parse(text);
    if (!q.ok()) continue;
    ++parsed;
    const std::string canonical = q->String();
    absl::StatusOr<Quantity> again = Quantity::Parse(canonical);
    ASSERT_TRUE(again.ok()) << text << " -> " << canonical << ": " << again.status();
    ASSERT_EQ(*again, *q) << text << " -> " << canonical;
    if (again->String() != canonical) {
      // Kubernetes' one exception: a whole binary-SI value that is not a multiple of 1024
      // prints bare digits, and bare digits parse as decimal SI.
      ASSERT_EQ(q->format(), QuantityFormat::kBinarySI) << text << " -> " << canonical;
      ASSERT_EQ(canonical.find_first_not_of("-0123456789"), std::string::npos) << text;
      ++reformatted;
      const std::string decimal = again->String();
      ASSERT_EQ(Quantity::Parse(decimal)->String(), decimal) << text << " -> " << canonical;
    }
  }
  EXPECT_GT(reformatted, 500);
  EXPECT_GT(parsed, 15000);
}

TEST(QuantityPropertyTest, AdditionAgreesWithInt64ArithmeticWhenItFits) {
  std::mt19937_64 rng(99);
  for (int i = 0; i < 5000; ++i) {
    const int64_t a = static_cast<int64_t>(rng() % 2000000000001ULL) - 1000000000000;
    const int64_t b = static_cast<int64_t>(rng() % 2000000000001ULL) - 1000000000000;
    const Quantity qa = Quantity::FromNanoCores(a);
    const Quantity qb = Quantity::FromScaled(b, -6);
    absl::StatusOr<Quantity> sum = qa.Add(qb);
    ASSERT_TRUE(sum.ok());
    ASSERT_EQ(sum->AsNanoCores().value(), a + b * 1000);
    absl::StatusOr<Quantity> diff = qa.Sub(qb);
    ASSERT_TRUE(diff.ok());
    ASSERT_EQ(diff->AsNanoCores().value(), a - b * 1000);
    ASSERT_EQ(qa.Compare(qb), a < b * 1000 ? -1 : (a == b * 1000 ? 0 : 1));
  }
}

}  // namespace
}  // namespace kubestat
