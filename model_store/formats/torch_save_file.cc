#include "model_store/formats/torch_save_file.h"

#include <cstring>
#include <memory>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "model_store/formats/zip_archive.h"

namespace embedding::model_store {
namespace {

// The values an allowed pickle can build. Callables are the allowed globals.
struct Value;
using ValuePtr = std::shared_ptr<Value>;
enum class Callable { kOrderedDict, kRebuildTensor };
struct StorageType {
  DType dtype;
};
struct StorageRef {
  DType dtype;
  std::string record;  // the archive's record that holds it
};
// A view of a storage, as _rebuild_tensor_v2 describes it (checked to stay inside it).
struct TensorSpec {
  DType dtype;
  std::string record;
  int64_t offset = 0;
  std::vector<int64_t> sizes, strides;
};
struct Tuple {
  std::vector<ValuePtr> items;
};
struct Dict {
  std::vector<std::pair<ValuePtr, ValuePtr>> items;
};
struct Value {
  std::variant<std::monostate, bool, int64_t, std::string, Tuple, Dict, Callable, StorageType,
               StorageRef, TensorSpec>
      v;
};

ValuePtr Make(decltype(Value::v) v) { return std::make_shared<Value>(Value{std::move(v)}); }

class PickleReader {
 public:
  // `records` is the archive's folder ("archive/"), where the storages live as data/<key>.
  PickleReader(const std::string& path, const ZipArchive* archive, std::string records,
               const std::string& pickle)
      : path_(path), archive_(archive), records_(std::move(records)), in_(pickle) {}

  absl::StatusOr<ValuePtr> Run() {
    while (pos_ < in_.size()) {
      const size_t at = pos_;
      const auto op = static_cast<uint8_t>(in_[pos_++]);
      absl::Status step = Step(op);
      if (!step.ok()) {
        return absl::DataLossError(absl::StrCat(path_, ": pickle byte ", at, ": ", step.message()));
      }
      if (result_) return result_;
    }
    return absl::DataLossError(absl::StrCat(path_, ": pickle ends without STOP"));
  }

 private:
  absl::Status Step(uint8_t op) {
    switch (op) {
      case 0x80:
        return Skip(1);  // PROTO
      case 0x95:
        return Skip(8);  // FRAME
      case 'c':
        return Global();
      case 'q':
        return Put(Unsigned(1));
      case 'r':
        return Put(Unsigned(4));
      case 0x94:
        return Put(memo_.size());  // MEMOIZE
      case 'h':
        return Get(Unsigned(1));
      case 'j':
        return Get(Unsigned(4));
      case '(':
        marks_.push_back(stack_.size());
        return absl::OkStatus();
      case ')':
        return Push(Make(Tuple{}));
      case 't':
        return TupleFromMark();
      case 0x85:
        return TupleOf(1);
      case 0x86:
        return TupleOf(2);
      case 0x87:
        return TupleOf(3);
      case '}':
        return Push(Make(Dict{}));
      case 's':
        return SetItems(stack_.size() - 2);
      case 'u':
        return SetItemsFromMark();
      case 'X':
        return String(Unsigned(4));
      case 0x8c:
        return String(Unsigned(1));
      case 'K':
        return Push(Make(static_cast<int64_t>(Unsigned(1))));
      case 'M':
        return Push(Make(static_cast<int64_t>(Unsigned(2))));
      case 'J':
        return Push(Make(static_cast<int64_t>(static_cast<int32_t>(Unsigned(4)))));
      case 0x8a:
        return Long1();
      case 'N':
        return Push(Make(std::monostate{}));
      case 0x88:
        return Push(Make(true));
      case 0x89:
        return Push(Make(false));
      case 'Q':
        return PersistentId();
      case 'R':
        return Reduce();
      case 'b':
        return Build();
      case '.':
        return Stop();
      default:
        return absl::InvalidArgumentError(absl::StrFormat("opcode 0x%02x is not allowed", op));
    }
  }

  // Reads `n` little-endian bytes; past the end reads zeros and sets truncated_.
  uint64_t Unsigned(int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
      if (pos_ >= in_.size()) {
        truncated_ = true;
        return 0;
      }
      v |= static_cast<uint64_t>(static_cast<uint8_t>(in_[pos_++])) << (8 * i);
    }
    return v;
  }
  absl::Status Skip(size_t n) {
    if (in_.size() - pos_ < n) return Truncated();
    pos_ += n;
    return absl::OkStatus();
  }
  absl::Status Truncated() const { return absl::InvalidArgumentError("truncated"); }
  absl::Status Push(ValuePtr v) {
    if (truncated_) return Truncated();
    if (stack_.size() > kMaxStack) return absl::InvalidArgumentError("stack too deep");
    stack_.push_back(std::move(v));
    return absl::OkStatus();
  }
  absl::StatusOr<ValuePtr> Pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back()))
      return absl::InvalidArgumentError("stack underflow");
    ValuePtr v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  absl::StatusOr<std::vector<ValuePtr>> PopToMark() {
    if (marks_.empty() || marks_.back() > stack_.size())
      return absl::InvalidArgumentError("no mark");
    std::vector<ValuePtr> items(stack_.begin() + marks_.back(), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  absl::Status Put(uint64_t index) {
    if (truncated_) return Truncated();
    if (stack_.empty()) return absl::InvalidArgumentError("memo of an empty stack");
    if (index > kMaxStack) return absl::InvalidArgumentError("memo index too large");
    if (memo_.size() <= index) memo_.resize(index + 1);
    memo_[index] = stack_.back();
    return absl::OkStatus();
  }
  absl::Status Get(uint64_t index) {
    if (index >= memo_.size() || !memo_[index])
      return absl::InvalidArgumentError(absl::StrCat("memo ", index, " is unset"));
    return Push(memo_[index]);
  }
  absl::Status String(uint64_t size) {
    if (truncated_ || in_.size() - pos_ < size) return Truncated();
    std::string s = in_.substr(pos_, size);
    pos_ += size;
    return Push(Make(std::move(s)));
  }
  absl::Status Long1() {
    const uint64_t n = Unsigned(1);
    if (n > 8) return absl::InvalidArgumentError("integer wider than 64 bits");
    uint64_t v = Unsigned(static_cast<int>(n));
    if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign
    return Push(Make(static_cast<int64_t>(v)));
  }
  absl::Status TupleFromMark() {
    auto items = PopToMark();
    if (!items.ok()) return items.status();
    return Push(Make(Tuple{*std::move(items)}));
  }
  absl::Status TupleOf(size_t n) {
    Tuple t;
    t.items.resize(n);
    for (size_t i = n; i-- > 0;) {
      auto v = Pop();
      if (!v.ok()) return v.status();
      t.items[i] = *std::move(v);
    }
    return Push(Make(std::move(t)));
  }
  absl::Status SetItems(size_t first) {
    if (first < 1 || first > stack_.size() || (stack_.size() - first) % 2 != 0)
      return absl::InvalidArgumentError("bad SETITEMS");
    auto* dict = std::get_if<Dict>(&stack_[first - 1]->v);
    if (dict == nullptr) return absl::InvalidArgumentError("SETITEMS on a value that is no dict");
    for (size_t i = first; i < stack_.size(); i += 2)
      dict->items.emplace_back(stack_[i], stack_[i + 1]);
    stack_.resize(first);
    return absl::OkStatus();
  }
  absl::Status SetItemsFromMark() {
    if (marks_.empty()) return absl::InvalidArgumentError("no mark");
    const size_t first = marks_.back();
    marks_.pop_back();
    return SetItems(first);
  }
  absl::Status Global() {
    const size_t module_end = in_.find('\n', pos_);
    const size_t name_end =
        module_end == std::string::npos ? module_end : in_.find('\n', module_end + 1);
    if (name_end == std::string::npos) return Truncated();
    const std::string module = in_.substr(pos_, module_end - pos_);
    const std::string name = in_.substr(module_end + 1, name_end - module_end - 1);
    pos_ = name_end + 1;
    if (module == "collections" && name == "OrderedDict") return Push(Make(Callable::kOrderedDict));
    if (module == "torch._utils" && name == "_rebuild_tensor_v2")
      return Push(Make(Callable::kRebuildTensor));
    if (module == "torch") {
      // Every typed storage torch.save names: integer ones hold buffers such as BERT's
      // `position_ids`, which the model ignores but must be able to read past.
      static const std::map<std::string, DType> kStorages = {
          {"FloatStorage", DType::kF32},     {"HalfStorage", DType::kF16},
          {"BFloat16Storage", DType::kBF16}, {"DoubleStorage", DType::kF64},
          {"LongStorage", DType::kI64},      {"IntStorage", DType::kI32},
          {"ShortStorage", DType::kI16},     {"CharStorage", DType::kI8},
          {"ByteStorage", DType::kU8},       {"BoolStorage", DType::kBool}};
      if (auto it = kStorages.find(name); it != kStorages.end())
        return Push(Make(StorageType{it->second}));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "global '", module, ".", name, "' is refused: a weights file may hold only tensors"));
  }
  // ('storage', storage type, key, location, numel) -> a storage of the archive, whose record
  // must hold exactly numel elements (checked from the zip's directory, nothing read yet).
  absl::Status PersistentId() {
    auto id = Pop();
    if (!id.ok()) return id.status();
    auto* t = std::get_if<Tuple>(&(*id)->v);
    if (t == nullptr || t->items.size() != 5) return absl::InvalidArgumentError("bad storage id");
    auto* type = std::get_if<StorageType>(&t->items[1]->v);
    auto* key = std::get_if<std::string>(&t->items[2]->v);
    auto* numel = std::get_if<int64_t>(&t->items[4]->v);
    if (type == nullptr || key == nullptr || numel == nullptr || *numel < 0 ||
        key->find('/') != std::string::npos)
      return absl::InvalidArgumentError("bad storage id");
    const std::string record = records_ + "data/" + *key;
    auto bytes = archive_->StoredSize(record);
    if (!bytes.ok()) return absl::InvalidArgumentError(bytes.status().message());
    const uint64_t element = DTypeSize(type->dtype);
    if (*bytes % element != 0 || *bytes / element != static_cast<uint64_t>(*numel))
      return absl::InvalidArgumentError(absl::StrCat("storage '", record, "' holds ", *bytes,
                                                     " bytes, not ", *numel, " elements of ",
                                                     element));
    return Push(Make(StorageRef{type->dtype, record}));
  }
  absl::Status Reduce() {
    auto args = Pop();
    if (!args.ok()) return args.status();
    auto callable = Pop();
    if (!callable.ok()) return callable.status();
    auto* fn = std::get_if<Callable>(&(*callable)->v);
    auto* tuple = std::get_if<Tuple>(&(*args)->v);
    if (fn == nullptr || tuple == nullptr)
      return absl::InvalidArgumentError("REDUCE of a value that is not an allowed callable");
    if (*fn == Callable::kOrderedDict) return Push(Make(Dict{}));
    auto tensor = RebuildTensor(tuple->items);
    if (!tensor.ok()) return tensor.status();
    return Push(Make(*std::move(tensor)));
  }
  // _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata]).
  absl::StatusOr<TensorSpec> RebuildTensor(const std::vector<ValuePtr>& a) {
    if (a.size() < 4) return absl::InvalidArgumentError("bad tensor");
    auto* storage = std::get_if<StorageRef>(&a[0]->v);
    auto* offset = std::get_if<int64_t>(&a[1]->v);
    auto* size = std::get_if<Tuple>(&a[2]->v);
    auto* stride = std::get_if<Tuple>(&a[3]->v);
    if (!storage || !offset || !size || !stride || size->items.size() != stride->items.size())
      return absl::InvalidArgumentError("bad tensor");
    TensorSpec spec{storage->dtype, storage->record, *offset, {}, {}};
    bool empty = false;
    int64_t last = *offset;  // the last element the view touches
    for (size_t i = 0; i < size->items.size(); ++i) {
      auto* n = std::get_if<int64_t>(&size->items[i]->v);
      auto* s = std::get_if<int64_t>(&stride->items[i]->v);
      if (!n || !s || *n < 0 || *s < 0 || *n > (int64_t{1} << 31) || *s > (int64_t{1} << 31))
        return absl::InvalidArgumentError("bad tensor shape");
      spec.sizes.push_back(*n);
      spec.strides.push_back(*s);
      empty = empty || *n == 0;
      if (*n > 0) last += (*n - 1) * *s;
    }
    auto bytes = archive_->StoredSize(storage->record);
    if (!bytes.ok()) return absl::InvalidArgumentError(bytes.status().message());
    const auto numel = static_cast<int64_t>(*bytes / DTypeSize(storage->dtype));
    if (*offset < 0 || (!empty && last >= numel))
      return absl::InvalidArgumentError("tensor reaches past its storage");
    // A view with more elements than its storage repeats them (zero strides): gathering it
    // would allocate in proportion to its claimed sizes, not to the file.
    int64_t elements = 1;
    for (int64_t n : spec.sizes) {
      if (n > 0 && elements > numel / n)
        return absl::InvalidArgumentError(
            "tensor has more elements than its storage (a repeating view)");
      elements *= n;
    }
    return spec;
  }
  // A dict's state (state_dict's `_metadata`) is dropped; nothing else may be built.
  absl::Status Build() {
    auto state = Pop();
    if (!state.ok()) return state.status();
    if (stack_.empty() || !std::holds_alternative<Dict>(stack_.back()->v))
      return absl::InvalidArgumentError("BUILD of a value that is not a dict");
    return absl::OkStatus();
  }
  absl::Status Stop() {
    auto v = Pop();
    if (!v.ok()) return v.status();
    result_ = *std::move(v);
    return absl::OkStatus();
  }

  static constexpr size_t kMaxStack = 1 << 16;
  const std::string& path_;
  const ZipArchive* archive_;
  const std::string records_;
  const std::string& in_;
  size_t pos_ = 0;
  bool truncated_ = false;
  std::vector<ValuePtr> stack_;
  std::vector<size_t> marks_;
  std::vector<ValuePtr> memo_;
  ValuePtr result_;
};

// The view's elements, in row-major order, copied out of `storage`.
std::string Gather(const TensorSpec& spec, const std::string& storage) {
  const size_t element = DTypeSize(spec.dtype);
  int64_t numel = 1;
  for (int64_t n : spec.sizes) numel *= n;
  std::string out(static_cast<size_t>(numel) * element, '\0');
  std::vector<int64_t> index(spec.sizes.size(), 0);
  for (int64_t i = 0; i < numel; ++i) {
    int64_t at = spec.offset;
    for (size_t d = 0; d < index.size(); ++d) at += index[d] * spec.strides[d];
    std::memcpy(out.data() + i * element, storage.data() + at * element, element);
    for (size_t d = index.size(); d-- > 0;) {  // the next index, last dimension fastest
      if (++index[d] < spec.sizes[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

bool IsRowMajor(const TensorSpec& spec) {
  int64_t expected = 1;
  for (size_t d = spec.sizes.size(); d-- > 0;) {
    if (spec.sizes[d] != 1 && spec.strides[d] != expected) return false;
    expected *= spec.sizes[d];
  }
  return true;
}

}  // namespace

// Turns the pickle's top-level dict into the file's views (a friend of TorchSaveFile).
class TorchSaveBuilder {
 public:
  static absl::Status Build(const std::string& path, const ZipArchive& archive, const Dict& dict,
                            TorchSaveFile* file) {
    for (const auto& [key, value] : dict.items) {
      auto* name = std::get_if<std::string>(&key->v);
      auto* spec = std::get_if<TensorSpec>(&value->v);
      if (name == nullptr || spec == nullptr) {
        return absl::DataLossError(
            absl::StrCat(path, ": holds an entry that is not a named tensor"));
      }
      auto storage = file->storages_.find(spec->record);
      if (storage == file->storages_.end()) {
        ASSIGN_OR_RETURN(std::string bytes, archive.Read(spec->record));
        storage = file->storages_.emplace(spec->record, std::move(bytes)).first;
      }
      TensorView view{*name, spec->dtype, spec->sizes, nullptr, 0, path};
      view.size_bytes = DTypeSize(spec->dtype);
      for (int64_t n : spec->sizes) view.size_bytes *= static_cast<size_t>(n);
      if (view.size_bytes == 0) {
        view.data = reinterpret_cast<const uint8_t*>(storage->second.data());
      } else if (IsRowMajor(*spec)) {
        view.data = reinterpret_cast<const uint8_t*>(storage->second.data()) +
                    spec->offset * DTypeSize(spec->dtype);
      } else {
        const std::string& gathered = file->gathered_[*name] = Gather(*spec, storage->second);
        view.data = reinterpret_cast<const uint8_t*>(gathered.data());
      }
      file->tensors_[*name] = std::move(view);
    }
    return absl::OkStatus();
  }
};

absl::StatusOr<std::unique_ptr<TorchSaveFile>> TorchSaveFile::Open(const std::string& path) {
  auto archive = ZipArchive::Open(path);
  if (!archive.ok()) {
    return absl::DataLossError(absl::StrCat(
        archive.status().message(),
        "; torch.save's legacy format (PyTorch before 1.6) is not read: save it again with a "
        "newer PyTorch, or as safetensors"));
  }
  // Every record sits in one folder named after the archive ("archive/", "pytorch_model/").
  const std::string first = (*archive)->FirstName();
  const std::string records = first.substr(0, first.find('/') + 1);
  if (records.empty() || !(*archive)->Has(records + "data.pkl"))
    return absl::DataLossError(absl::StrCat(path, ": no data.pkl in the archive"));
  if ((*archive)->Has(records + "byteorder")) {
    ASSIGN_OR_RETURN(std::string order, (*archive)->Read(records + "byteorder"));
    if (order != "little")
      return absl::DataLossError(absl::StrCat(path, ": byte order '", order.substr(0, 16),
                                              "'; only little-endian files are read"));
  }
  ASSIGN_OR_RETURN(const std::string pickle, (*archive)->Read(records + "data.pkl"));
  ASSIGN_OR_RETURN(ValuePtr root, PickleReader(path, archive->get(), records, pickle).Run());
  auto* dict = std::get_if<Dict>(&root->v);
  if (dict == nullptr) return absl::DataLossError(absl::StrCat(path, ": does not hold a dict"));
  auto file = std::unique_ptr<TorchSaveFile>(new TorchSaveFile());
  RETURN_IF_ERROR(TorchSaveBuilder::Build(path, **archive, *dict, file.get()));
  return file;
}

}  // namespace embedding::model_store
