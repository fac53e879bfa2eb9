// The safetensors reader against valid and deliberately corrupt files: every corruption is an
// error naming the file and the tensor, never a crash or an out-of-bounds read.
#include "model_store/formats/safetensors_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model_store/formats/safetensors_writer.h"
#include "tests/testing/test_models.h"

namespace embedding::model_store {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string WithHeader(const std::string& header, const std::string& data) {
  std::string out;
  const uint64_t len = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xFF));
  return out + header + data;
}

absl::Status Parse(const std::string& bytes) {
  return SafetensorsFile::FromBytes("bad.safetensors",
                                    reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())
      .status();
}

std::string ValidFile() {
  std::map<std::string, F32Tensor> tensors;
  tensors["a.weight"] = {{2, 3}, {1, 2, 3, 4, 5, 6}};
  tensors["b.bias"] = {{2}, {-1.5f, 7.25f}};
  return SerializeSafetensors(tensors);
}

TEST(SafetensorsFile, ReadsWhatTheWriterWrote) {
  const std::string bytes = ValidFile();
  auto file = SafetensorsFile::FromBytes(
      "ok.safetensors", reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  ASSERT_TRUE(file.ok()) << file.status();
  const auto& a = (*file)->tensors().at("a.weight");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.dtype, DType::kF32);
  float values[6];
  std::memcpy(values, a.data, sizeof(values));
  EXPECT_EQ(values[5], 6.0f);
  const auto& b = (*file)->tensors().at("b.bias");
  std::memcpy(values, b.data, 2 * sizeof(float));
  EXPECT_EQ(values[1], 7.25f);
}

TEST(SafetensorsFile, OpensFromDiskAndReportsMissingFile) {
  const std::string dir = testing::MakeScratchDir("disk");
  testing::WriteFile(dir + "/m.safetensors", ValidFile());
  auto file = SafetensorsFile::Open(dir + "/m.safetensors");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->tensors().size(), 2u);
  auto missing = SafetensorsFile::Open(dir + "/nope.safetensors");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("nope.safetensors"));
}

TEST(SafetensorsFile, TruncatedFileNamesTheTensorOutsideTheData) {
  std::string bytes = ValidFile();
  bytes.resize(bytes.size() - 4);  // cut into b.bias, the last tensor
  const auto status = Parse(bytes);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("bad.safetensors"), HasSubstr("b.bias"), HasSubstr("outside")));
}

TEST(SafetensorsFile, FileShorterThanTheLengthPrefix) {
  const auto status = Parse("abc");
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("no header"));
}

TEST(SafetensorsFile, HeaderLengthBeyondTheFile) {
  std::string bytes = ValidFile();
  bytes[0] = '\xF0';
  bytes[1] = '\xFF';  // ~65 KB header in a file of a few hundred bytes
  const auto status = Parse(bytes);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("runs past the end"));
}

TEST(SafetensorsFile, HugeHeaderLengthIsRefusedWithoutAllocation) {
  std::string bytes = ValidFile();
  for (int i = 0; i < 8; ++i) bytes[i] = '\xFF';
  const auto status = Parse(bytes);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("exceeds the 100 MB limit"));
}

TEST(SafetensorsFile, MalformedJson) {
  const auto status = Parse(WithHeader("{\"a\": {\"dtype\": ", ""));
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("not a well-formed JSON"));
}

TEST(SafetensorsFile, UnknownDtypeNamesTensorAndDtype) {
  const auto status = Parse(WithHeader(
      R"({"w": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}})", std::string(8, '\0')));
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("'w'"), HasSubstr("C64"), HasSubstr("BF16")));
}

// transformers saved an I64 position_ids buffer from 2020 to 2023: every dtype of the format
// parses, with its own element size (a wrong size would be a shape/offsets mismatch).
TEST(SafetensorsFile, EveryDtypeOfTheFormatParsesWithItsElementSize) {
  for (const auto& [name, size] : std::vector<std::pair<std::string, int>>{{"F64", 8},
                                                                           {"F32", 4},
                                                                           {"F16", 2},
                                                                           {"BF16", 2},
                                                                           {"I64", 8},
                                                                           {"I32", 4},
                                                                           {"I16", 2},
                                                                           {"I8", 1},
                                                                           {"U64", 8},
                                                                           {"U32", 4},
                                                                           {"U16", 2},
                                                                           {"U8", 1},
                                                                           {"BOOL", 1},
                                                                           {"F8_E4M3", 1},
                                                                           {"F8_E5M2", 1}}) {
    const std::string header =
        absl::StrCat(R"({"t": {"dtype": ")", name, R"(", "shape": [1, 3], "data_offsets": [0, )",
                     3 * size, "]}}");
    auto bytes = WithHeader(header, std::string(3 * size, '\0'));
    auto file = SafetensorsFile::FromBytes("f", reinterpret_cast<const uint8_t*>(bytes.data()),
                                           bytes.size());
    ASSERT_TRUE(file.ok()) << name << ": " << file.status();
    const TensorView& view = (*file)->tensors().at("t");
    EXPECT_STREQ(DTypeName(view.dtype), name.c_str());
    EXPECT_EQ(view.size_bytes, static_cast<size_t>(3 * size));
    const auto wrong =
        WithHeader(absl::StrCat(R"({"t": {"dtype": ")", name,
                                R"(", "shape": [1, 3], "data_offsets": [0, )", 3 * size + 1, "]}}"),
                   std::string(3 * size + 1, '\0'));
    EXPECT_THAT(std::string(Parse(wrong).message()), HasSubstr("span")) << name;
  }
}

TEST(SafetensorsFile, OffsetsOutOfRange) {
  const auto status = Parse(WithHeader(
      R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})", std::string(16, '\0')));
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("'w'"), HasSubstr("[8, 24]"), HasSubstr("outside")));
}

TEST(SafetensorsFile, ReversedOffsets) {
  const auto status = Parse(WithHeader(
      R"({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}})", std::string(16, '\0')));
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("'w'"));
}

TEST(SafetensorsFile, OverlappingTensorsAreNamed) {
  const auto status = Parse(WithHeader(
      R"({"first": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
          "second": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
      std::string(12, '\0')));
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("first"), HasSubstr("second"), HasSubstr("overlap")));
}

TEST(SafetensorsFile, ShapeDisagreeingWithByteSize) {
  const auto status =
      Parse(WithHeader(R"({"w": {"dtype": "BF16", "shape": [3, 2], "data_offsets": [0, 8]}})",
                       std::string(8, '\0')));
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("'w'"), HasSubstr("6 elements")));
}

TEST(SafetensorsFile, OverflowingShapeIsRefused) {
  const auto status = Parse(WithHeader(
      R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296, 16], "data_offsets": [0, 0]}})",
      ""));
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("'w'"));
}

TEST(SafetensorsFile, NegativeShapeAndMissingFields) {
  EXPECT_THAT(
      Parse(WithHeader(R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}})", ""))
          .message(),
      HasSubstr("shape entries must be >= 0"));
  EXPECT_THAT(Parse(WithHeader(R"({"w": {"dtype": "F32", "shape": [1]}})", "")).message(),
              HasSubstr("data_offsets"));
  EXPECT_THAT(Parse(WithHeader(R"({"w": 3})", "")).message(), HasSubstr("not an object"));
}

}  // namespace
}  // namespace embedding::model_store
