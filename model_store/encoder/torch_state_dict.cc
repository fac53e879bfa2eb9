#include "model_store/encoder/torch_state_dict.h"

#include <caffe2/serialize/inline_container.h>

#include <cstring>
#include <memory>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace embedding::model_store {
namespace {

// The values an allowed pickle can build. Callables are the allowed globals.
struct Value;
using ValuePtr = std::shared_ptr<Value>;
enum class Callable { kOrderedDict, kRebuildTensor };
struct StorageType {
  torch::ScalarType dtype;
};
struct StorageRef {
  torch::ScalarType dtype;
  std::string key;
  int64_t numel = 0;
};
struct Tuple {
  std::vector<ValuePtr> items;
};
struct Dict {
  std::vector<std::pair<ValuePtr, ValuePtr>> items;
};
struct Value {
  std::variant<std::monostate, bool, int64_t, std::string, Tuple, Dict, Callable, StorageType,
               StorageRef, torch::Tensor>
      v;
};

ValuePtr Make(decltype(Value::v) v) { return std::make_shared<Value>(Value{std::move(v)}); }

class PickleReader {
 public:
  PickleReader(const std::string& path, caffe2::serialize::PyTorchStreamReader* archive,
               const std::string& pickle)
      : path_(path), archive_(archive), in_(pickle) {}

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
      static const std::map<std::string, torch::ScalarType> kStorages = {
          {"FloatStorage", torch::kFloat32},
          {"HalfStorage", torch::kFloat16},
          {"BFloat16Storage", torch::kBFloat16},
          {"DoubleStorage", torch::kFloat64}};
      if (auto it = kStorages.find(name); it != kStorages.end())
        return Push(Make(StorageType{it->second}));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "global '", module, ".", name, "' is refused: a head file may hold only tensors"));
  }
  // ('storage', storage type, key, location, numel) -> a storage of the archive.
  absl::Status PersistentId() {
    auto id = Pop();
    if (!id.ok()) return id.status();
    auto* t = std::get_if<Tuple>(&(*id)->v);
    if (t == nullptr || t->items.size() != 5) return absl::InvalidArgumentError("bad storage id");
    auto* type = std::get_if<StorageType>(&t->items[1]->v);
    auto* key = std::get_if<std::string>(&t->items[2]->v);
    auto* numel = std::get_if<int64_t>(&t->items[4]->v);
    if (type == nullptr || key == nullptr || numel == nullptr || *numel < 0)
      return absl::InvalidArgumentError("bad storage id");
    return Push(Make(StorageRef{type->dtype, *key, *numel}));
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
  absl::StatusOr<torch::Tensor> RebuildTensor(const std::vector<ValuePtr>& a) {
    if (a.size() < 4) return absl::InvalidArgumentError("bad tensor");
    auto* storage = std::get_if<StorageRef>(&a[0]->v);
    auto* offset = std::get_if<int64_t>(&a[1]->v);
    auto* size = std::get_if<Tuple>(&a[2]->v);
    auto* stride = std::get_if<Tuple>(&a[3]->v);
    if (!storage || !offset || !size || !stride || size->items.size() != stride->items.size())
      return absl::InvalidArgumentError("bad tensor");
    std::vector<int64_t> sizes, strides;
    bool empty = false;
    int64_t last = *offset;  // the last element the view touches
    for (size_t i = 0; i < size->items.size(); ++i) {
      auto* n = std::get_if<int64_t>(&size->items[i]->v);
      auto* s = std::get_if<int64_t>(&stride->items[i]->v);
      if (!n || !s || *n < 0 || *s < 0 || *n > (int64_t{1} << 31) || *s > (int64_t{1} << 31))
        return absl::InvalidArgumentError("bad tensor shape");
      sizes.push_back(*n);
      strides.push_back(*s);
      empty = empty || *n == 0;
      if (*n > 0) last += (*n - 1) * *s;
    }
    if (*offset < 0 || (!empty && last >= storage->numel))
      return absl::InvalidArgumentError("tensor reaches past its storage");
    const std::string record = "data/" + storage->key;
    if (!archive_->hasRecord(record))
      return absl::InvalidArgumentError(absl::StrCat("missing storage record '", record, "'"));
    auto [data, bytes] = archive_->getRecord(record);
    const int64_t element = static_cast<int64_t>(c10::elementSize(storage->dtype));
    if (bytes % element != 0 || static_cast<int64_t>(bytes / element) != storage->numel)
      return absl::InvalidArgumentError(absl::StrCat("storage '", record, "' holds ", bytes,
                                                     " bytes, not ", storage->numel,
                                                     " elements of ", element));
    torch::Tensor flat =
        torch::empty({storage->numel}, torch::TensorOptions().dtype(storage->dtype));
    std::memcpy(flat.data_ptr(), data.get(), bytes);
    return flat.as_strided(sizes, strides, *offset).contiguous();
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
  caffe2::serialize::PyTorchStreamReader* archive_;
  const std::string& in_;
  size_t pos_ = 0;
  bool truncated_ = false;
  std::vector<ValuePtr> stack_;
  std::vector<size_t> marks_;
  std::vector<ValuePtr> memo_;
  ValuePtr result_;
};

}  // namespace

absl::StatusOr<std::map<std::string, torch::Tensor>> ReadTorchStateDict(const std::string& path) {
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> archive;
  std::string pickle;
  try {
    archive = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
    if (!archive->hasRecord("data.pkl"))
      return absl::DataLossError(absl::StrCat(path, ": no data.pkl in the archive"));
    auto [data, size] = archive->getRecord("data.pkl");
    pickle.assign(static_cast<const char*>(data.get()), size);
  } catch (const c10::Error& e) {
    return absl::DataLossError(absl::StrCat(path, ": not a readable torch.save archive (",
                                            e.what_without_backtrace(), ")"));
  }
  absl::StatusOr<ValuePtr> root;
  try {
    root = PickleReader(path, archive.get(), pickle).Run();
  } catch (const c10::Error& e) {
    return absl::DataLossError(absl::StrCat(path, ": ", e.what_without_backtrace()));
  }
  if (!root.ok()) return root.status();
  auto* dict = std::get_if<Dict>(&(*root)->v);
  if (dict == nullptr) return absl::DataLossError(absl::StrCat(path, ": does not hold a dict"));
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& [key, value] : dict->items) {
    auto* name = std::get_if<std::string>(&key->v);
    auto* tensor = std::get_if<torch::Tensor>(&value->v);
    if (name == nullptr || tensor == nullptr)
      return absl::DataLossError(absl::StrCat(path, ": holds an entry that is not a named tensor"));
    tensors[*name] = *tensor;
  }
  return tensors;
}

}  // namespace embedding::model_store
