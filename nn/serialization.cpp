// Mirrors safetensors/torch.py and safetensors' Rust reader (SafeTensors::deserialize /
// validate), and torch.nn.Module.load_state_dict(strict=True).
#include "nn/serialization.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <sys/stat.h>

#include "engine/autograd/grad_mode.h"
#include "engine/core/file_io.h"
#include "engine/core/out_of_memory.h"
#include "ops/functions.h"

namespace remat::nn {

namespace {

// std::map-backed (ordered_json's linear lookups made a header of N entries cost N^2); the
// entries' order in the header is kept separately (deserialize_safetensors).
using Json = nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // safetensors' MAX_HEADER_SIZE
// A header entry is 3 levels deep ({"name": {"shape": [..]}}); deeper is refused before the JSON
// is parsed (nlohmann's dump and destructor recurse once per level).
constexpr int kMaxHeaderDepth = 64;
// Tensors (and metadata) in one header.
constexpr size_t kMaxHeaderEntries = 1'000'000;
// Characters of the file quoted in an error message.
constexpr size_t kMaxQuoted = 100;

// At most kMaxQuoted characters of `text`, with how many there were when it is cut.
std::string excerpt(const std::string& text) {
  if (text.size() <= kMaxQuoted) return text;
  return text.substr(0, kMaxQuoted) + "... (" + std::to_string(text.size()) + " characters)";
}

// A JSON value for an error message: its first kMaxQuoted characters.
std::string excerpt(const Json& v) { return excerpt(v.dump()); }

// One pass over the header's bytes, before it is parsed: refuses nesting deeper than
// kMaxHeaderDepth and more than kMaxHeaderEntries top-level names, and returns those names in the
// header's order (the map-backed Json keeps neither the order nor a repeated name, and
// nlohmann's parser callbacks cost N^2 on a wide object). Only meaningful for valid JSON, which
// the parse checks next.
std::vector<std::string> scan_header(const char* text, uint64_t n) {
  std::vector<std::string> keys;
  int depth = 0;
  bool expect_key = false;  // at depth 1, after '{' or ','
  for (uint64_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (c == '"') {
      const uint64_t start = i;
      for (++i; i < n && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
      if (depth == 1 && expect_key && i < n) {
        expect_key = false;
        const Json key = Json::parse(text + start, text + i + 1, nullptr, /*allow_exceptions=*/false);
        if (key.is_string()) keys.push_back(key.get<std::string>());
        REMAT_CHECK(keys.size() <= kMaxHeaderEntries, "safetensors: the header holds more than ", kMaxHeaderEntries,
                    " entries");
      }
    } else if (c == '[' || c == '{') {
      REMAT_CHECK(++depth <= kMaxHeaderDepth, "safetensors: the header nests arrays or objects more than ",
                  kMaxHeaderDepth, " levels deep (at byte ", i, " of ", n, "); a safetensors header needs 3");
      expect_key = depth == 1 && c == '{';
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 1) {
      expect_key = true;
    }
  }
  return keys;
}

// remat dtype <-> safetensors dtype name.
const char* dtype_name(ScalarType t) {
  switch (t) {
    case kFloat: return "F32";
    case kDouble: return "F64";
    case kBFloat16: return "BF16";
    case kHalf: return "F16";
    case kLong: return "I64";
    case kBool: return "BOOL";
    case kComplexFloat: return "C64";    // safetensors' complex64
    case kComplexDouble: return "C128";  // no safetensors dtype: files remat alone reads
  }
  return "?";
}

bool dtype_from_name(const std::string& name, ScalarType* out) {
  for (ScalarType t : {kFloat, kDouble, kBFloat16, kHalf, kLong, kBool, kComplexFloat, kComplexDouble}) {
    if (name == dtype_name(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

// The format stores little-endian bytes; remat writes and reads host memory as is.
bool host_is_little_endian() {
  const uint16_t one = 1;
  unsigned char first = 0;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

void check_host() {
  REMAT_CHECK(host_is_little_endian(), "safetensors: remat reads and writes safetensors on little-endian hosts only");
}

std::string read_file(const std::string& path, const char* what) {
  // A folder or a FIFO (which would never end) is refused before it is opened.
  struct stat st {};
  REMAT_CHECK(::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode), what, ": '", path,
              "' is not a regular file (a folder, FIFO or device)");
  std::ifstream in(path, std::ios::binary);
  REMAT_CHECK(in.good(), what, ": cannot open '", path, "' for reading");
  // The file's size is known: a file larger than memory is refused before anything is read, and a
  // failed allocation names the bytes (engine/core/out_of_memory.h).
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const std::string contents = "the contents of '" + path + "' (" + what + ")";
  check_fits_in_memory(size, contents);
  std::string bytes;
  needing_bytes(size, contents, [&] { bytes.reserve(size); });
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) bytes.append(buf, static_cast<size_t>(in.gcount()));
  REMAT_CHECK(!in.bad(), what, ": error while reading '", path, "'");
  return bytes;
}

// One header entry, validated.
struct Entry {
  std::string name;
  ScalarType dtype;
  Shape shape;
  uint64_t begin, end;
};

std::string shape_string(const Shape& s) {
  std::ostringstream os;
  detail::write(os, s);
  return os.str();
}

// A JSON value that is a non-negative integer fitting in int64/uint64.
bool as_unsigned(const Json& v, uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    *out = static_cast<uint64_t>(v.get<int64_t>());
    return true;
  }
  return false;
}

Entry parse_entry(const std::string& name, const Json& v) {
  const std::string where = "safetensors: tensor '" + excerpt(name) + "'";
  REMAT_CHECK(v.is_object(), where, ": expected an object with dtype, shape and data_offsets, got ", excerpt(v));
  Entry e;
  e.name = name;

  auto dt = v.find("dtype");
  REMAT_CHECK(dt != v.end() && dt->is_string(), where, ": missing or non-string \"dtype\"");
  REMAT_CHECK(dtype_from_name(dt->get<std::string>(), &e.dtype), where, ": unknown dtype '", excerpt(dt->get<std::string>()),
              "' (remat reads F32, F64, BF16, F16, I64, BOOL)");

  auto sh = v.find("shape");
  REMAT_CHECK(sh != v.end() && sh->is_array(), where, ": missing or non-array \"shape\"");
  for (const Json& d : *sh) {
    uint64_t n = 0;
    REMAT_CHECK(as_unsigned(d, &n) && n <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), where,
                ": shape ", excerpt(*sh), " must hold non-negative integers");
    e.shape.push_back(static_cast<int64_t>(n));
  }

  auto off = v.find("data_offsets");
  REMAT_CHECK(off != v.end() && off->is_array() && off->size() == 2, where,
              ": \"data_offsets\" must be an array [begin, end]");
  REMAT_CHECK(as_unsigned((*off)[0], &e.begin) && as_unsigned((*off)[1], &e.end), where, ": data_offsets ",
              excerpt(*off), " must be non-negative integers");
  REMAT_CHECK(e.begin <= e.end, where, ": data_offsets ", excerpt(*off), " end before they begin");

  // Size in bytes, saturating (a shape whose size overflows can never match its offsets).
  unsigned __int128 bytes = elementSize(e.dtype);
  for (int64_t d : e.shape) {
    bytes *= static_cast<uint64_t>(d);
    if (bytes > std::numeric_limits<uint64_t>::max()) bytes = std::numeric_limits<uint64_t>::max();
  }
  REMAT_CHECK(bytes == e.end - e.begin, where, ": shape ", excerpt(shape_string(e.shape)), " of ", dt->get<std::string>(),
              " needs ", static_cast<uint64_t>(bytes), " bytes, but data_offsets ", excerpt(*off), " span ",
              e.end - e.begin);
  return e;
}

}  // namespace

std::string serialize_safetensors(const NamedTensors& tensors, const Metadata& metadata) {
  check_host();
  autograd::NoGradGuard no_grad;
  std::vector<Tensor> data;
  // The header's text, entry by entry in the given order (a JSON object built by key lookups
  // would cost N^2 or sort the names).
  std::string json = "{";
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    json += "\"__metadata__\":" + m.dump();
  }
  uint64_t offset = 0;
  std::set<std::string> names;
  for (const auto& [name, t] : tensors) {
    REMAT_CHECK(!name.empty() && name != "__metadata__", "save_safetensors: invalid tensor name '", name, "'");
    REMAT_CHECK(names.insert(name).second, "save_safetensors: the name '", name, "' appears twice");
    REMAT_CHECK(t.defined(), "save_safetensors: tensor '", name, "' is undefined");
    Tensor c = t.device().type == kCPU ? t.detach() : t.detach().to(Device{kCPU});
    c = c.contiguous();
    const uint64_t n = static_cast<uint64_t>(c.numel()) * elementSize(c.dtype());
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();  // three keys, in the format's order
    entry["dtype"] = dtype_name(c.dtype());
    entry["shape"] = c.sizes();
    entry["data_offsets"] = {offset, offset + n};
    json += (json.size() > 1 ? "," : "") + Json(name).dump() + ":" + entry.dump();
    offset += n;
    data.push_back(c);
  }
  json += "}";
  // Pad with spaces so the data starts 8-byte aligned (safetensors does the same).
  json.append((8 - json.size() % 8) % 8, ' ');

  std::string out;
  needing_bytes(8 + json.size() + offset, "a safetensors file of " + std::to_string(data.size()) + " tensors",
                [&] { out.reserve(8 + json.size() + offset); });
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += json;
  for (const Tensor& c : data) {
    const size_t bytes = static_cast<size_t>(c.numel()) * elementSize(c.dtype());
    if (bytes > 0) out.append(static_cast<const char*>(c.data_ptr()), bytes);
  }
  return out;
}

NamedTensors deserialize_safetensors(const std::string& bytes, Metadata* metadata) {
  check_host();
  // 1. Header length.
  REMAT_CHECK(bytes.size() >= 8, "safetensors: the file is ", bytes.size(),
              " bytes, too short for the 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  REMAT_CHECK(n <= kMaxHeaderBytes, "safetensors: header length ", n, " is larger than the limit of ", kMaxHeaderBytes,
              " bytes (not a safetensors file?)");
  REMAT_CHECK(n <= bytes.size() - 8, "safetensors: invalid header length ", n, ": the file has only ",
              bytes.size() - 8, " bytes after the length");
  const char* text = bytes.data() + 8;
  REMAT_CHECK(n > 0 && text[0] == '{', "safetensors: the header must be a JSON object starting with '{'");

  // 2. Header JSON: its depth, names and their order scanned first (scan_header), then parsed.
  const std::vector<std::string> keys = scan_header(text, n);
  Json header = Json::parse(text, text + n, nullptr, /*allow_exceptions=*/false);
  REMAT_CHECK(!header.is_discarded(), "safetensors: the header is not valid JSON");
  REMAT_CHECK(header.is_object(), "safetensors: the header must be a JSON object");
  // Top-level names must be unique: the JSON parser keeps the last.
  if (keys.size() != header.size()) {
    std::set<std::string> seen;
    for (const std::string& k : keys)
      REMAT_CHECK(seen.insert(k).second, "safetensors: the header names '", excerpt(k), "' twice");
  }
  REMAT_INTERNAL_ASSERT(keys.size() == header.size(), "safetensors: scanned ", keys.size(), " names, parsed ",
                        header.size());

  // 3. Entries, in the header's order.
  std::vector<Entry> entries;
  entries.reserve(keys.size());
  Metadata meta;
  for (const std::string& key : keys) {
    const Json& value = header.at(key);
    if (key == "__metadata__") {
      REMAT_CHECK(value.is_object(), "safetensors: \"__metadata__\" must be an object of strings");
      for (auto m = value.begin(); m != value.end(); ++m) {
        REMAT_CHECK(m->is_string(), "safetensors: \"__metadata__\" value for '", excerpt(m.key()),
                    "' must be a string, got ", excerpt(*m));
        meta[m.key()] = m->get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(key, value));
  }

  // 4. The data: tensors back to back from offset 0, covering it exactly.
  const uint64_t data_size = bytes.size() - 8 - n;
  std::vector<size_t> order(entries.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_pair(entries[a].begin, entries[a].end) < std::make_pair(entries[b].begin, entries[b].end);
  });
  uint64_t cursor = 0;
  const Entry* previous = nullptr;
  for (size_t i : order) {
    const Entry& e = entries[i];
    REMAT_CHECK(e.begin >= cursor, "safetensors: tensor '", excerpt(e.name), "' (data_offsets [", e.begin, ", ", e.end,
                "]) overlaps tensor '", previous ? excerpt(previous->name) : "", "' (which ends at ", cursor, ")");
    REMAT_CHECK(e.begin == cursor, "safetensors: gap in the data before tensor '", excerpt(e.name), "': it begins at ",
                e.begin, " but the previous tensor ends at ", cursor);
    REMAT_CHECK(e.end <= data_size, "safetensors: tensor '", excerpt(e.name), "' (data_offsets [", e.begin, ", ", e.end,
                "]) runs past the end of the data (", data_size, " bytes; the file is truncated?)");
    cursor = e.end;
    previous = &e;
  }
  REMAT_CHECK(cursor == data_size, "safetensors: the data section is ", data_size, " bytes but the tensors cover ",
              cursor, " (trailing bytes)");

  // 5. Tensors (only now: nothing is returned from a file that fails any check).
  const char* data = text + n;
  for (size_t i : order) {
    const Entry& e = entries[i];
    if (e.dtype != kBool) continue;
    for (uint64_t b = e.begin; b < e.end; ++b)
      REMAT_CHECK(data[b] == 0 || data[b] == 1, "safetensors: BOOL tensor '", excerpt(e.name), "' holds byte ",
                  static_cast<int>(static_cast<unsigned char>(data[b])), " (only 0 and 1 are booleans)");
  }
  NamedTensors out;
  out.reserve(entries.size());
  for (size_t i : order) {
    const Entry& e = entries[i];
    Tensor t = make_empty(e.shape, e.dtype, Device{kCPU});
    if (e.end > e.begin) std::memcpy(t.data_ptr(), data + e.begin, e.end - e.begin);
    out.emplace_back(e.name, t);
  }
  if (metadata != nullptr) *metadata = std::move(meta);
  return out;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors, const Metadata& metadata) {
  const std::string bytes = serialize_safetensors(tensors, metadata);
  // To a temporary name, the write and the close checked, then renamed: no half-written file.
  try {
    write_file_atomically(path, bytes);
  } catch (const Error& e) {
    throw Error(std::string("save_safetensors: ") + e.what());
  }
}

NamedTensors load_safetensors(const std::string& path, Metadata* metadata) {
  return deserialize_safetensors(read_file(path, "load_safetensors"), metadata);
}

void save(const Module& module, const std::string& path) { save_safetensors(path, module.state_dict()); }

void load(Module& module, const std::string& path) {
  NamedTensors state = deserialize_safetensors(read_file(path, "load"));
  load_state_dict(module, state);
}

void load_state_dict(Module& module, const NamedTensors& state) {
  NamedTensors own = module.state_dict();
  // Check everything first: names (both ways), then shapes.
  std::vector<std::string> missing, unexpected, mismatched;
  std::vector<std::pair<Tensor, Tensor>> copies;  // (destination, source)
  std::set<std::string> given;
  for (const auto& [name, t] : state) {
    REMAT_CHECK(given.insert(name).second, "load_state_dict: the name '", name, "' appears twice");
    REMAT_CHECK(t.defined(), "load_state_dict: tensor '", name, "' is undefined");
  }
  std::set<std::string> expected;
  for (const auto& [name, dst] : own) {
    expected.insert(name);
    auto it = std::find_if(state.begin(), state.end(), [&](const auto& p) { return p.first == name; });
    if (it == state.end()) {
      missing.push_back(name);
      continue;
    }
    if (it->second.sizes() != dst.sizes()) {
      mismatched.push_back("size mismatch for " + name + ": copying a param with shape " +
                           shape_string(it->second.sizes()) + " from checkpoint, the shape in current model is " +
                           shape_string(dst.sizes()) + ".");
      continue;
    }
    copies.emplace_back(dst, it->second);
  }
  for (const auto& [name, t] : state)
    if (!expected.count(name)) unexpected.push_back(name);

  if (!missing.empty() || !unexpected.empty() || !mismatched.empty()) {
    std::ostringstream os;
    os << "Error(s) in loading state_dict for " << module.type_name() << ":";
    auto list = [&](const char* what, const std::vector<std::string>& names) {
      if (names.empty()) return;
      os << "\n\t" << what << ": ";
      for (size_t i = 0; i < names.size(); ++i) os << (i ? ", " : "") << '"' << names[i] << '"';
      os << ".";
    };
    list("Missing key(s) in state_dict", missing);
    list("Unexpected key(s) in state_dict", unexpected);
    for (const std::string& m : mismatched) os << "\n\t" << m;
    throw Error(os.str());
  }

  autograd::NoGradGuard no_grad;
  for (auto& [dst, src] : copies) {
    Tensor d = dst;
    copy_(d, src.device() == dst.device() ? src : src.to(dst.device()));
  }
}

}  // namespace remat::nn
