#include "kubestat/kube/token_file.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "kubestat/core/clock.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::kube {
namespace {

UserInfo User(std::string name, std::string uid, std::vector<std::string> groups = {}) {
  return UserInfo{std::move(name), std::move(uid), std::move(groups), {}};
}

TEST(TokenFileParseTest, ReadsKubeApiserverFormat) {
  absl::StatusOr<StaticTokens> tokens = ParseTokenAuthFile(
      "t1,alice,1001,\"team-a,system:monitoring\"\n"
      "t2,bob,,pushers\r\n"
      "\n"
      "t3,carol,3\n"
      "\"t,4\",\"da\"\"ve\",4,\"\",ignored,columns\n"
      "t5,erin,5,\"multi\nline,,x\"\n"
      "t1,alice-again,1002\n",
      "tokens.csv");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  EXPECT_EQ(tokens->size(), 5u);
  EXPECT_EQ(tokens->at("t1"), User("alice-again", "1002"));  // later record wins
  EXPECT_EQ(tokens->at("t2"), User("bob", "", {"pushers"}));
  EXPECT_EQ(tokens->at("t3"), User("carol", "3"));
  EXPECT_EQ(tokens->at("t,4"), User("da\"ve", "4"));
  EXPECT_EQ(tokens->at("t5"), User("erin", "5", {"multi\nline", "x"}));
}

TEST(TokenFileParseTest, SkipsEmptyTokens) {
  absl::StatusOr<StaticTokens> tokens = ParseTokenAuthFile(",nobody,0\nt,x,1", "f");
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(tokens->size(), 1u);
  EXPECT_EQ(tokens->at("t"), User("x", "1"));
}

TEST(TokenFileParseTest, ErrorsNameFileAndLineButNeverTheToken) {
  struct Case {
    std::string content;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"secret-a,alice\n",
            "token file f.csv: line 1: must have at least 3 columns (token, "
            "user name, user uid), found 2"},
           {"ok,a,1\nsecret-b,,1\n", "token file f.csv: line 2: empty user name"},
           {"ok,a,1\nsec\"ret,a,1\n", "token file f.csv: line 2: bare \" in non-quoted field"},
           {"\"secret-c\"x,a,1\n",
            "token file f.csv: line 1: extraneous or missing \" in quoted "
            "field"},
           {"ok,a,1\n\"secret-d,a,1\n", "token file f.csv: line 2: quoted field is not closed"},
       }) {
    absl::StatusOr<StaticTokens> tokens = ParseTokenAuthFile(c.content, "f.csv");
    EXPECT_EQ(tokens.status().code(), absl::StatusCode::kInvalidArgument) << c.content;
    EXPECT_EQ(tokens.status().message(), c.message);
    EXPECT_EQ(tokens.status().message().find("secret"), absl::string_view::npos);
  }
}

class TokenAuthFileTest : public ::testing::Test {
 protected:
  void Write(const std::string& content) { std::ofstream(path_, std::ios::trunc) << content; }

  kubestat::testing::TempDir dir_;
  std::string path_ = dir_.File("tokens.csv");
  FakeClock clock_;
};

TEST_F(TokenAuthFileTest, LooksUpAndFallsThroughOnUnknownTokens) {
  Write("tok-1,alice,1\n");
  auto file = TokenAuthFile::Open(path_, clock_, std::chrono::seconds(1));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->Lookup("tok-1"), User("alice", "1"));
  EXPECT_EQ((*file)->Lookup("tok-2"), std::nullopt);
  EXPECT_EQ((*file)->Lookup("tok-"), std::nullopt);
}

TEST_F(TokenAuthFileTest, ReloadsWhenTheFileChangesAfterTheCheckInterval) {
  Write("tok-1,alice,1\n");
  auto file = TokenAuthFile::Open(path_, clock_, std::chrono::seconds(1));
  ASSERT_TRUE(file.ok());
  Write("tok-2,bob,2,\"g1,g2\"\n");
  // Not checked again before the interval has passed.
  EXPECT_EQ((*file)->Lookup("tok-1"), User("alice", "1"));
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_EQ((*file)->Lookup("tok-1"), std::nullopt);
  EXPECT_EQ((*file)->Lookup("tok-2"), User("bob", "2", {"g1", "g2"}));
}

TEST_F(TokenAuthFileTest, ReplacedFileOfTheSameSizeIsNoticed) {
  Write("tok-1,alice,1\n");
  auto file = TokenAuthFile::Open(path_, clock_, std::chrono::seconds(1));
  ASSERT_TRUE(file.ok());
  // Rotation by rename: same size, new inode.
  const std::string next = dir_.File("next.csv");
  std::ofstream(next) << "tok-9,alice,1\n";
  std::filesystem::rename(next, path_);
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_EQ((*file)->Lookup("tok-1"), std::nullopt);
  EXPECT_EQ((*file)->Lookup("tok-9"), User("alice", "1"));
}

TEST_F(TokenAuthFileTest, BrokenRewriteKeepsThePreviousTokens) {
  Write("tok-1,alice,1\n");
  auto file = TokenAuthFile::Open(path_, clock_, std::chrono::seconds(1));
  ASSERT_TRUE(file.ok());
  Write("tok-2,only-two-columns\n");
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_EQ((*file)->Lookup("tok-1"), User("alice", "1"));
  EXPECT_EQ((*file)->Lookup("tok-2"), std::nullopt);
  std::filesystem::remove(path_);
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_EQ((*file)->Lookup("tok-1"), User("alice", "1"));
}

TEST_F(TokenAuthFileTest, OpenFailsForMissingOrInvalidFiles) {
  EXPECT_EQ(TokenAuthFile::Open(path_, clock_, std::chrono::seconds(1)).status().code(),
            absl::StatusCode::kNotFound);
  Write("x\n");
  EXPECT_EQ(TokenAuthFile::Open(path_, clock_, std::chrono::seconds(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kubestat::kube
