#include "model_store/formats/safetensors_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace {

// The reference implementation refuses headers above 100 MB; so do we.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

absl::Status Corrupt(const std::string& file, const std::string& what) {
  return absl::DataLossError(absl::StrCat(file, ": ", what));
}

absl::StatusOr<DType> ParseDType(const std::string& file, const std::string& tensor,
                                 const std::string& name) {
  if (std::optional<DType> dtype = DTypeNamed(name)) return *dtype;
  return Corrupt(file, absl::StrCat("tensor '", tensor, "': unknown dtype '", name,
                                    "' (known: ", DTypeNames(), ")"));
}

absl::Status ParseTensor(const std::string& file, const std::string& name,
                         const nlohmann::json& info, const uint8_t* data_area, uint64_t data_size,
                         TensorView* out) {
  const std::string where = absl::StrCat("tensor '", name, "'");
  if (!info.is_object()) return Corrupt(file, where + ": entry is not an object");
  auto dtype_it = info.find("dtype");
  auto shape_it = info.find("shape");
  auto offsets_it = info.find("data_offsets");
  if (dtype_it == info.end() || !dtype_it->is_string())
    return Corrupt(file, where + ": missing or non-string 'dtype'");
  if (shape_it == info.end() || !shape_it->is_array())
    return Corrupt(file, where + ": missing or non-array 'shape'");
  if (offsets_it == info.end() || !offsets_it->is_array() || offsets_it->size() != 2)
    return Corrupt(file, where + ": 'data_offsets' must be an array [begin, end]");
  ASSIGN_OR_RETURN(out->dtype, ParseDType(file, name, dtype_it->get<std::string>()));

  // Element count with overflow checks: a hostile shape must not wrap around.
  uint64_t numel = 1;
  for (const auto& dim : *shape_it) {
    if (!dim.is_number_unsigned()) return Corrupt(file, where + ": shape entries must be >= 0");
    const uint64_t d = dim.get<uint64_t>();
    if (d != 0 && numel > std::numeric_limits<uint64_t>::max() / d)
      return Corrupt(file, where + ": shape overflows");
    numel *= d;
    out->shape.push_back(static_cast<int64_t>(d));
  }
  const auto& begin_json = (*offsets_it)[0];
  const auto& end_json = (*offsets_it)[1];
  if (!begin_json.is_number_unsigned() || !end_json.is_number_unsigned())
    return Corrupt(file, where + ": data_offsets must be non-negative integers");
  const uint64_t begin = begin_json.get<uint64_t>();
  const uint64_t end = end_json.get<uint64_t>();
  if (begin > end || end > data_size) {
    return Corrupt(file, absl::StrCat(where, ": data_offsets [", begin, ", ", end,
                                      "] outside the data area of ", data_size, " bytes"));
  }
  const uint64_t elem = DTypeSize(out->dtype);
  if (numel > std::numeric_limits<uint64_t>::max() / elem || numel * elem != end - begin) {
    return Corrupt(file, absl::StrCat(where, ": shape needs ", numel, " elements of ", elem,
                                      " bytes but data_offsets span ", end - begin, " bytes"));
  }
  out->name = name;
  out->file = file;
  out->data = data_area + begin;
  out->size_bytes = end - begin;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::FromBytes(
    const std::string& label, const uint8_t* bytes, size_t size) {
  if (size < 8) return Corrupt(label, absl::StrCat("file of ", size, " bytes has no header"));
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];  // little-endian
  if (header_len > kMaxHeaderBytes)
    return Corrupt(label, absl::StrCat("header length ", header_len, " exceeds the 100 MB limit"));
  if (header_len > size - 8) {
    return Corrupt(label, absl::StrCat("header length ", header_len, " runs past the end of the ",
                                       size, "-byte file (truncated?)"));
  }
  const char* header_begin = reinterpret_cast<const char*>(bytes + 8);
  nlohmann::json header =
      nlohmann::json::parse(header_begin, header_begin + header_len, nullptr, false);
  if (header.is_discarded() || !header.is_object())
    return Corrupt(label, "header is not a well-formed JSON object");

  auto file = std::unique_ptr<SafetensorsFile>(new SafetensorsFile());
  const uint8_t* data_area = bytes + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    TensorView view;
    RETURN_IF_ERROR(ParseTensor(label, name, info, data_area, data_size, &view));
    file->tensors_.emplace(name, std::move(view));
  }

  // Overlap check: sort spans by start and compare neighbours.
  std::vector<const TensorView*> by_offset;
  for (const auto& [name, view] : file->tensors_) {
    if (view.size_bytes > 0) by_offset.push_back(&view);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorView* a, const TensorView* b) { return a->data < b->data; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorView* prev = by_offset[i - 1];
    if (by_offset[i]->data < prev->data + prev->size_bytes) {
      return Corrupt(
          label, absl::StrCat("tensors '", prev->name, "' and '", by_offset[i]->name, "' overlap"));
    }
  }
  return file;
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::DataLossError(absl::StrCat(path, ": not a regular file"));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* mapping = nullptr;
  if (size > 0) {
    mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) {
      ::close(fd);
      return absl::InternalError(absl::StrCat(path, ": mmap failed: ", std::strerror(errno)));
    }
  }
  ::close(fd);
  auto parsed = FromBytes(path, static_cast<const uint8_t*>(mapping), size);
  if (!parsed.ok()) {
    if (mapping) ::munmap(mapping, size);
    return parsed.status();
  }
  (*parsed)->mapping_ = mapping;
  (*parsed)->mapping_size_ = size;
  return parsed;
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_) ::munmap(mapping_, mapping_size_);
}

}  // namespace embedding::model_store
