// Tests nn/serialization.cpp: the safetensors byte format, round trips, validation of malformed
// files (each error, byte by byte), and strict module loading that changes nothing on error.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <unistd.h>

#include "remat.h"

using namespace remat;
using Catch::Contains;

namespace {

// A safetensors file from a header text and a data section: 8-byte little-endian length first.
std::string file_bytes(const std::string& header, const std::string& data) {
  std::string out;
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + header + data;
}

std::string f32_bytes(std::initializer_list<float> values) {
  std::string out;
  for (float v : values) out.append(reinterpret_cast<const char*>(&v), sizeof v);
  return out;
}

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

nn::GPTConfig tiny_config(uint64_t seed) {
  nn::GPTConfig c;
  c.vocab_size = 11;
  c.block_size = 8;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.seed = seed;
  return c;
}

// Every tensor of a module's state, copied (to compare before and after a failed load).
nn::NamedTensors snapshot(const nn::Module& m) {
  nn::NamedTensors out;
  for (const auto& [name, t] : m.state_dict()) out.emplace_back(name, t.detach().clone());
  return out;
}

bool same_state(const nn::Module& m, const nn::NamedTensors& expected) {
  nn::NamedTensors now = m.state_dict();
  if (now.size() != expected.size()) return false;
  for (size_t i = 0; i < now.size(); ++i)
    if (now[i].first != expected[i].first || !equal(now[i].second, expected[i].second)) return false;
  return true;
}

}  // namespace

TEST_CASE("safetensors: a 2x2 F32 tensor is laid out byte for byte as the format says", "[serialization]") {
  Tensor w = from_vector({1, 2, 3, 4}, {2, 2}, kFloat);
  std::string bytes = nn::serialize_safetensors({{"w", w}});
  // 57 bytes of JSON, padded with 7 spaces to 64 so the data starts 8-byte aligned.
  const std::string json = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  REQUIRE(json.size() == 57);
  std::string expected("\x40\x00\x00\x00\x00\x00\x00\x00", 8);
  expected += json + std::string(7, ' ');
  // 1.0f, 2.0f, 3.0f, 4.0f in little-endian IEEE 754: 0x3f800000, 0x40000000, 0x40400000, 0x40800000
  expected += std::string("\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40", 16);
  CHECK(bytes.size() == 8 + 64 + 16);
  CHECK(bytes == expected);
}

TEST_CASE("safetensors: reads a hand-built file (other key order, no padding, metadata)", "[serialization]") {
  const std::string header =
      R"({"__metadata__":{"format":"pt","note":"hand-built"},)"
      R"("b":{"data_offsets":[8,16],"shape":[],"dtype":"F64"},)"
      R"("a":{"shape":[2],"dtype":"F32","data_offsets":[0,8]}})";
  double pi = 3.25;
  std::string data = f32_bytes({-1.5f, 0.25f}) + std::string(reinterpret_cast<const char*>(&pi), 8);
  nn::Metadata meta;
  nn::NamedTensors t = nn::deserialize_safetensors(file_bytes(header, data), &meta);
  REQUIRE(t.size() == 2);
  // In the order of the data, not of the header.
  CHECK(t[0].first == "a");
  CHECK(t[0].second.dtype() == kFloat);
  CHECK(t[0].second.sizes() == Shape{2});
  CHECK(t[0].second.to_vector() == std::vector<double>{-1.5, 0.25});
  CHECK(t[1].first == "b");
  CHECK(t[1].second.dtype() == kDouble);
  CHECK(t[1].second.dim() == 0);
  CHECK(t[1].second.item() == 3.25);
  CHECK(meta == nn::Metadata{{"format", "pt"}, {"note", "hand-built"}});
}

TEST_CASE("safetensors: every dtype, 0-dim, empty and strided tensors round-trip bitwise", "[serialization]") {
  Generator gen(7);
  nn::NamedTensors in = {
      {"f32", randn({3, 4}, kFloat, &gen)},
      {"f64", randn({5}, kDouble, &gen)},
      {"bf16", randn({2, 3}, kFloat, &gen).to(kBFloat16)},
      {"f16", randn({2, 2}, kFloat, &gen).to(kHalf)},
      {"i64", from_vector({-3, 0, 1LL << 40}, {3}, kLong)},
      {"bool", from_vector({1, 0, 1}, {3}, kBool)},
      {"scalar", scalar_tensor(2.5, kDouble)},
      {"empty", zeros({0, 3}, kFloat)},
      {"strided", transpose(randn({3, 2}, kFloat, &gen), 0, 1)},
  };
  REQUIRE_FALSE(in.back().second.is_contiguous());
  const std::string path = temp_path("round_trip.safetensors");
  nn::save_safetensors(path, in, {{"framework", "remat"}});
  nn::Metadata meta;
  nn::NamedTensors out = nn::load_safetensors(path, &meta);
  REQUIRE(out.size() == in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    INFO(in[i].first);
    CHECK(out[i].first == in[i].first);
    CHECK(out[i].second.dtype() == in[i].second.dtype());
    CHECK(equal(out[i].second, in[i].second));
  }
  CHECK(meta.at("framework") == "remat");
  // Tensors that require grad are saved by value.
  Tensor p = ones({2}, kDouble).requires_grad_(true);
  nn::NamedTensors back = nn::deserialize_safetensors(nn::serialize_safetensors({{"p", p}}));
  CHECK_FALSE(back[0].second.requires_grad());
  CHECK(equal(back[0].second, p.detach()));
}

TEST_CASE("safetensors: saving refuses bad names", "[serialization]") {
  Tensor t = ones({1});
  REQUIRE_THROWS_WITH(nn::serialize_safetensors({{"a", t}, {"a", t}}), Contains("the name 'a' appears twice"));
  REQUIRE_THROWS_WITH(nn::serialize_safetensors({{"__metadata__", t}}), Contains("invalid tensor name '__metadata__'"));
  REQUIRE_THROWS_WITH(nn::serialize_safetensors({{"", t}}), Contains("invalid tensor name ''"));
  REQUIRE_THROWS_WITH(nn::serialize_safetensors({{"u", Tensor()}}), Contains("tensor 'u' is undefined"));
  REQUIRE_THROWS_WITH(nn::save_safetensors(temp_path("no/such/dir/x.safetensors"), {{"a", t}}),
                      Contains("save_safetensors: cannot write") && Contains("x.safetensors") &&
                          Contains("No such file or directory"));
  REQUIRE_THROWS_WITH(nn::load_safetensors(temp_path("missing.safetensors")),
                      Contains("cannot open") && Contains("missing.safetensors"));
}

TEST_CASE("safetensors: malformed files give a clear error", "[serialization]") {
  const std::string ok_header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string ok_data = f32_bytes({1.0f, 2.0f});
  REQUIRE(nn::deserialize_safetensors(file_bytes(ok_header, ok_data)).size() == 1);
  auto load = [](const std::string& bytes) { return nn::deserialize_safetensors(bytes); };
  auto with_header = [&](const std::string& header) { return load(file_bytes(header, ok_data)); };
  auto entry = [](const std::string& body) { return R"({"a":)" + body + "}"; };

  SECTION("header length") {
    REQUIRE_THROWS_WITH(load(std::string("\x05\x00\x00", 3)), Contains("too short for the 8-byte header length"));
    std::string bytes = file_bytes(ok_header, ok_data);
    bytes[0] = static_cast<char>(bytes[0] + 9);  // claims 9 more header bytes than there are
    REQUIRE_THROWS_WITH(load(bytes.substr(0, 8 + ok_header.size())), Contains("invalid header length"));
    std::string huge = file_bytes(ok_header, ok_data);
    huge[7] = '\x01';  // 2^56 + ...
    REQUIRE_THROWS_WITH(load(huge), Contains("is larger than the limit"));
    REQUIRE_THROWS_WITH(load(file_bytes("", "")), Contains("must be a JSON object starting with '{'"));
  }
  SECTION("JSON") {
    REQUIRE_THROWS_WITH(with_header(R"({"a":{"dtype":"F32",)"), Contains("not valid JSON"));
    REQUIRE_THROWS_WITH(with_header(R"([1, 2])"), Contains("must be a JSON object"));
    REQUIRE_THROWS_WITH(with_header(ok_header + "x"), Contains("not valid JSON"));
    REQUIRE_THROWS_WITH(with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                    R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})"),
                        Contains("names 'a' twice"));
  }
  SECTION("entries") {
    REQUIRE_THROWS_WITH(with_header(entry("[0, 8]")), Contains("tensor 'a'") && Contains("expected an object"));
    REQUIRE_THROWS_WITH(with_header(entry(R"({"shape":[2],"data_offsets":[0,8]})")),
                        Contains("tensor 'a'") && Contains("\"dtype\""));
    REQUIRE_THROWS_WITH(with_header(entry(R"({"dtype":"I32","shape":[2],"data_offsets":[0,8]})")),
                        Contains("tensor 'a'") && Contains("unknown dtype 'I32'"));
    REQUIRE_THROWS_WITH(with_header(entry(R"({"dtype":"F32","data_offsets":[0,8]})")),
                        Contains("tensor 'a'") && Contains("\"shape\""));
    REQUIRE_THROWS_WITH(with_header(entry(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})")),
                        Contains("shape [-2] must hold non-negative integers"));
    REQUIRE_THROWS_WITH(with_header(entry(R"({"dtype":"F32","shape":[2.5],"data_offsets":[0,8]})")),
                        Contains("must hold non-negative integers"));
    REQUIRE_THROWS_WITH(with_header(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})")),
                        Contains("\"data_offsets\" must be an array [begin, end]"));
    REQUIRE_THROWS_WITH(with_header(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[-1,8]})")),
                        Contains("must be non-negative integers"));
    REQUIRE_THROWS_WITH(with_header(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[8,0]})")),
                        Contains("end before they begin"));
    REQUIRE_THROWS_WITH(with_header(R"({"__metadata__":{"k":1},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})"),
                        Contains("\"__metadata__\" value for 'k' must be a string"));
  }
  SECTION("sizes and offsets") {
    // [3] of F32 is 12 bytes, the offsets span 8
    REQUIRE_THROWS_WITH(with_header(entry(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})")),
                        Contains("tensor 'a': shape [3] of F32 needs 12 bytes, but data_offsets [0,8] span 8"));
    // a shape whose size overflows 64 bits can never match
    REQUIRE_THROWS_WITH(
        with_header(entry(R"({"dtype":"F64","shape":[4294967296,4294967296,16],"data_offsets":[0,8]})")),
        Contains("tensor 'a'") && Contains("needs"));
    REQUIRE_THROWS_WITH(load(file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                        R"("b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
                                        ok_data)),
                        Contains("tensor 'b' (data_offsets [2, 6]) overlaps tensor 'a'"));
    REQUIRE_THROWS_WITH(load(file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", ok_data)),
                        Contains("gap in the data before tensor 'a'"));
    // The file ends early: a truncated data section.
    REQUIRE_THROWS_WITH(load(file_bytes(ok_header, ok_data.substr(0, 6))),
                        Contains("runs past the end of the data (6 bytes; the file is truncated?)"));
    REQUIRE_THROWS_WITH(load(file_bytes(ok_header, ok_data + "xyz")),
                        Contains("the data section is 11 bytes but the tensors cover 8 (trailing bytes)"));
  }
  SECTION("BOOL bytes") {
    REQUIRE_THROWS_WITH(load(file_bytes(R"({"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})",
                                        std::string("\x01\x07", 2))),
                        Contains("BOOL tensor 'm' holds byte 7"));
  }
}

TEST_CASE("Module save/load: a GPT's weights round-trip", "[serialization]") {
  nn::GPT a(tiny_config(1)), b(tiny_config(2));
  REQUIRE_FALSE(equal(a.wte->weight, b.wte->weight));
  const std::string path = temp_path("gpt.safetensors");
  nn::save(a, path);
  // The file holds state_dict(): the tied lm_head.weight once, as wte.weight.
  nn::NamedTensors file = nn::load_safetensors(path);
  CHECK(file.size() == a.state_dict().size());
  for (const auto& [name, t] : file) CHECK(name != "lm_head.weight");

  nn::load(b, path);
  CHECK(same_state(b, snapshot(a)));
  CHECK(b.lm_head->weight.is_same(b.wte->weight));  // still tied
  for (const Tensor& p : b.parameters()) {
    CHECK(p.is_leaf());
    CHECK(p.requires_grad());
  }
  Tensor idx = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, kLong);
  CHECK(equal(a.forward(idx).logits, b.forward(idx).logits));
}

TEST_CASE("Module load is strict and changes nothing on error", "[serialization]") {
  nn::GPT a(tiny_config(1)), b(tiny_config(2));
  const nn::NamedTensors before = snapshot(b);
  nn::NamedTensors state = a.state_dict();

  SECTION("missing and unexpected keys") {
    nn::NamedTensors partial(state.begin() + 1, state.end());
    partial.emplace_back("extra.weight", ones({2}));
    const std::string path = temp_path("partial.safetensors");
    nn::save_safetensors(path, partial);
    REQUIRE_THROWS_WITH(nn::load(b, path),
                        Contains("Error(s) in loading state_dict for GPT") &&
                            Contains("Missing key(s) in state_dict: \"" + state[0].first + "\"") &&
                            Contains("Unexpected key(s) in state_dict: \"extra.weight\""));
    CHECK(same_state(b, before));
  }
  SECTION("a shape mismatch") {
    nn::NamedTensors bad = state;
    bad.back().second = zeros({3});
    REQUIRE_THROWS_WITH(nn::load_state_dict(b, bad),
                        Contains("size mismatch for " + bad.back().first + ": copying a param with shape [3] from "
                                 "checkpoint, the shape in current model is"));
    CHECK(same_state(b, before));
  }
  SECTION("a file that is corrupt after the first tensor") {
    std::string bytes = nn::serialize_safetensors(state);
    bytes.pop_back();  // truncated
    const std::string path = temp_path("truncated.safetensors");
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    REQUIRE_THROWS_WITH(nn::load(b, path), Contains("truncated"));
    CHECK(same_state(b, before));
  }
  SECTION("dtypes convert, as load_state_dict does") {
    nn::NamedTensors doubles;
    for (const auto& [name, t] : state) doubles.emplace_back(name, t.to(kDouble));
    nn::load_state_dict(b, doubles);
    CHECK(b.wte->weight.dtype() == kFloat);
    CHECK(same_state(b, snapshot(a)));
  }
}

// Untrusted files, bounded (issue 45): each hostile header is refused (or loaded) within a time
// bound, with a message that quotes at most about 100 characters of it.
namespace {

// Generous for sanitizer builds: the point is linear, not quadratic or unbounded.
constexpr double kSecondsPerFile = 30.0;

template <class F>
double seconds_of(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The message deserialize_safetensors throws for `bytes`, and how long it took.
std::pair<std::string, double> refusal(const std::string& bytes) {
  std::string what;
  const double s = seconds_of([&] {
    try {
      nn::deserialize_safetensors(bytes);
    } catch (const Error& e) {
      what = e.what();
    }
  });
  return {what, s};
}

std::string nested(int depth) { return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']'); }

}  // namespace

TEST_CASE("safetensors: a header nested 100,000 deep is refused before it is parsed", "[serialization][fuzz]") {
  for (int depth : {100000, 50000, 65}) {
    INFO(depth);
    // In a tensor's shape, and as the tensor itself.
    for (const std::string& header : {R"({"a":{"dtype":"F32","shape":)" + nested(depth) + R"(,"data_offsets":[0,0]}})",
                                      R"({"a":)" + nested(depth) + "}"}) {
      const auto [what, seconds] = refusal(file_bytes(header, ""));
      CHECK_THAT(what, Contains("safetensors: the header nests arrays or objects more than 64 levels deep (at byte ") &&
                           Contains("); a safetensors header needs 3"));
      CHECK(what.size() < 200);
      CHECK(seconds < kSecondsPerFile);
    }
  }
  // 64 levels are parsed (and then refused as a malformed entry, quoting 100 characters of it).
  const auto [what, seconds] = refusal(file_bytes(R"({"a":)" + nested(63) + "}", ""));
  CHECK(what == "safetensors: tensor 'a': expected an object with dtype, shape and data_offsets, got " +
                    std::string(63, '[') + std::string(37, ']') + "... (126 characters)");
}

TEST_CASE("safetensors: messages quote at most 100 characters of a long name or value", "[serialization][fuzz]") {
  const std::string name(100000, 'n');
  const auto [what, seconds] =
      refusal(file_bytes(R"({")" + name + R"(":{"dtype":"I32","shape":[],"data_offsets":[0,4]}})", "xxxx"));
  CHECK(what == "safetensors: tensor '" + std::string(100, 'n') + "... (100000 characters)': unknown dtype 'I32' "
                "(remat reads F32, F64, BF16, F16, I64, BOOL)");
  const auto [dtype_what, s2] =
      refusal(file_bytes(R"({"a":{"dtype":")" + name + R"(","shape":[],"data_offsets":[0,4]}})", "xxxx"));
  CHECK(dtype_what.size() < 250);
  CHECK_THAT(dtype_what, Contains("... (100000 characters)'"));
  const auto [duplicate, s3] = refusal(file_bytes(R"({")" + name + R"(":1,")" + name + R"(":2})", ""));
  CHECK(duplicate == "safetensors: the header names '" + std::string(100, 'n') + "... (100000 characters)' twice");
}

TEST_CASE("safetensors: 200,000 zero-size tensors load in time linear in the entries", "[serialization][fuzz]") {
  std::string header = "{";
  for (int i = 0; i < 200000; ++i)
    header += (i ? "," : "") + std::string("\"t") + std::to_string(i) + R"(":{"dtype":"F32","shape":[0],"data_offsets":[0,0]})";
  header += "}";
  const std::string bytes = file_bytes(header, "");
  nn::NamedTensors loaded;
  const double seconds = seconds_of([&] { loaded = nn::deserialize_safetensors(bytes); });
  REQUIRE(loaded.size() == 200000);
  CHECK(loaded.front().first == "t0");  // the header's order, for tensors at the same offset
  CHECK(loaded.back().first == "t199999");
  CHECK(loaded[12345].second.sizes() == Shape{0});
  CHECK(seconds < kSecondsPerFile);
}

TEST_CASE("safetensors: a header of more than 1,000,000 entries is refused", "[serialization][fuzz]") {
  std::string header = "{";
  for (int i = 0; i <= 1000000; ++i) header += (i ? ",\"" : "\"") + std::to_string(i) + "\":0";
  header += "}";
  const auto [what, seconds] = refusal(file_bytes(header, ""));
  CHECK(what == "safetensors: the header holds more than 1000000 entries");
  CHECK(seconds < kSecondsPerFile);
}

TEST_CASE("safetensors: a file larger than this machine's memory is refused before it is read", "[serialization][fuzz]") {
  // A sparse file: its size, on no disk blocks.
  const std::string path = temp_path("larger_than_memory.safetensors");
  const uint64_t size = 2 * physical_memory_bytes() + 8;
  {
    std::ofstream create(path);
  }
  REQUIRE(::truncate(path.c_str(), static_cast<off_t>(size)) == 0);
  std::string what;
  const double seconds = seconds_of([&] {
    try {
      nn::load_safetensors(path);
    } catch (const Error& e) {
      what = e.what();
    }
  });
  CHECK(what == "out of memory: needed " + std::to_string(size) + " bytes for the contents of '" + path +
                    "' (load_safetensors), more than this machine's " + std::to_string(physical_memory_bytes()) +
                    " bytes of memory");
  CHECK(seconds < kSecondsPerFile);
  std::remove(path.c_str());
}
