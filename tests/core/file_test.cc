#include "kubestat/core/file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "kubestat/testing/temp_dir.h"

namespace kubestat {
namespace {

TEST(ReadFileTest, ReadsEveryByte) {
  testing::TempDir dir;
  std::string bytes(200000, 'x');
  bytes[7] = '\0';
  const std::string path = dir.Write("blob", bytes);
  absl::StatusOr<std::string> read = ReadFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, bytes);
}

TEST(ReadFileTest, AMissingFileIsNotFoundNamingItAndWhatItIsFor) {
  absl::StatusOr<std::string> read = ReadFile("/nonexistent/kubestat", "--token-auth-file");
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(read.status().message(),
            "--token-auth-file: cannot read /nonexistent/kubestat: No such file or directory");
}

TEST(ReadFileTest, AFileOverTheCapIsRefused) {
  testing::TempDir dir;
  const std::string path = dir.Write("big", std::string(1000, 'y'));
  EXPECT_TRUE(ReadFile(path, "", 1000).ok());
  absl::StatusOr<std::string> read = ReadFile(path, "rules", 999);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(read.status().message(), "rules: " + path + " is larger than 999 bytes");
}

}  // namespace
}  // namespace kubestat
