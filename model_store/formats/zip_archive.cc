#include "model_store/formats/zip_archive.h"

#include <zip.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace embedding::model_store {

absl::StatusOr<std::unique_ptr<ZipArchive>> ZipArchive::Open(const std::string& path) {
  int error = 0;
  zip_t* archive = zip_open(path.c_str(), ZIP_RDONLY, &error);
  if (archive == nullptr) {
    zip_error_t why;
    zip_error_init_with_code(&why, error);
    std::string message = zip_error_strerror(&why);
    zip_error_fini(&why);
    return absl::DataLossError(absl::StrCat(path, ": not a readable zip archive (", message, ")"));
  }
  std::error_code ignored;
  const uintmax_t file_size = std::filesystem::file_size(path, ignored);
  return std::unique_ptr<ZipArchive>(new ZipArchive(path, archive, ignored ? 0 : file_size));
}

ZipArchive::~ZipArchive() { zip_discard(archive_); }

std::string ZipArchive::FirstName() const {
  if (zip_get_num_entries(archive_, 0) < 1) return "";
  const char* name = zip_get_name(archive_, 0, ZIP_FL_ENC_RAW);
  return name == nullptr ? "" : name;
}

bool ZipArchive::Has(const std::string& name) const {
  return zip_name_locate(archive_, name.c_str(), ZIP_FL_ENC_RAW) >= 0;
}

absl::StatusOr<uint64_t> ZipArchive::StoredSize(const std::string& name) const {
  const zip_int64_t index = zip_name_locate(archive_, name.c_str(), ZIP_FL_ENC_RAW);
  zip_stat_t stat;
  if (index < 0 || zip_stat_index(archive_, index, 0, &stat) != 0)
    return absl::DataLossError(absl::StrCat(path_, ": no record '", name, "'"));
  // torch.save stores every record uncompressed; a compressed one could expand past the file.
  if (!(stat.valid & ZIP_STAT_COMP_METHOD) || stat.comp_method != ZIP_CM_STORE) {
    return absl::DataLossError(absl::StrCat(
        path_, ": record '", name, "' is compressed; torch.save writes records uncompressed"));
  }
  const bool sized = (stat.valid & ZIP_STAT_SIZE) && (stat.valid & ZIP_STAT_COMP_SIZE);
  if (!sized || stat.comp_size != stat.size || stat.size > file_size_) {
    return absl::DataLossError(
        absl::StrCat(path_, ": record '", name, "' claims more bytes than the file holds"));
  }
  return stat.size;
}

absl::StatusOr<std::string> ZipArchive::Read(const std::string& name) const {
  ASSIGN_OR_RETURN(const uint64_t size, StoredSize(name));
  zip_file_t* file = zip_fopen(archive_, name.c_str(), ZIP_FL_ENC_RAW);
  if (file == nullptr)
    return absl::DataLossError(absl::StrCat(path_, ": cannot open record '", name, "'"));
  std::string bytes(size, '\0');
  const zip_int64_t read = zip_fread(file, bytes.data(), size);
  zip_fclose(file);
  if (read < 0 || static_cast<uint64_t>(read) != size) {
    return absl::DataLossError(
        absl::StrCat(path_, ": record '", name, "' is shorter than its ", size, " bytes"));
  }
  return bytes;
}

}  // namespace embedding::model_store
