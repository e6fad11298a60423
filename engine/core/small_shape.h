// Mirrors c10/util/SmallVector.h for the one case remat needs on hot paths: a shape stored
// inline (no allocation) up to kInline dims, converting to and from Shape.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace remat {

class SmallShape {
 public:
  static constexpr size_t kInline = 6;

  SmallShape() = default;
  SmallShape(const std::vector<int64_t>& s) { assign(s.data(), s.size()); }  // NOLINT: implicit
  SmallShape(const SmallShape& o) { assign(o.data(), o.size()); }
  SmallShape& operator=(const SmallShape& o) {
    if (this != &o) assign(o.data(), o.size());
    return *this;
  }
  SmallShape& operator=(const std::vector<int64_t>& s) {  // no temporary SmallShape
    assign(s.data(), s.size());
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const int64_t* data() const { return size_ <= kInline ? inline_ : heap_.data(); }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  int64_t operator[](size_t i) const { return data()[i]; }
  operator std::vector<int64_t>() const { return std::vector<int64_t>(begin(), end()); }  // NOLINT
  std::vector<int64_t> vec() const { return *this; }

  bool operator==(const std::vector<int64_t>& o) const {
    return o.size() == size_ && std::equal(begin(), end(), o.begin());
  }
  bool operator!=(const std::vector<int64_t>& o) const { return !(*this == o); }

 private:
  void assign(const int64_t* p, size_t n) {
    size_ = n;
    if (n <= kInline) {
      std::copy(p, p + n, inline_);
      heap_.clear();
    } else {
      heap_.assign(p, p + n);
    }
  }
  int64_t inline_[kInline];  // only the first size_ entries are meaningful
  std::vector<int64_t> heap_;
  size_t size_ = 0;
};

inline bool operator==(const std::vector<int64_t>& a, const SmallShape& b) { return b == a; }
inline bool operator!=(const std::vector<int64_t>& a, const SmallShape& b) { return b != a; }

}  // namespace remat
