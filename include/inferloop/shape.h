// Shape: a tensor's dimensions, a vector of int64 that keeps up to kInlineRank dims inline
// (no heap allocation), so creating and copying tensors of ordinary rank never allocates.
//
// It behaves like std::vector<int64_t> (same members, contiguous storage, iterators are
// pointers) and converts implicitly to and from std::vector<int64_t>, so code written for a
// vector keeps working. Ranks above kInlineRank spill to the heap.
//
// Dim (below): one dimension of a declared, possibly symbolic, shape.
#pragma once

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace inferloop {

class Shape {
 public:
  static constexpr size_t kInlineRank = 8;

  using value_type = int64_t;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = int64_t&;
  using const_reference = const int64_t&;
  using pointer = int64_t*;
  using const_pointer = const int64_t*;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  Shape() noexcept {}  // user-provided: `const Shape s;` is valid; inline_ needs no zeroing
  Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }
  explicit Shape(size_t n) { resize(n); }
  Shape(size_t n, int64_t value) { assign(n, value); }
  template <std::input_iterator It>
  Shape(It first, It last) { assign(first, last); }
  Shape(const std::vector<int64_t>& v) { assign(v.begin(), v.end()); }  // NOLINT: implicit by design
  Shape(const Shape& o) { assign(o.begin(), o.end()); }
  Shape(Shape&& o) noexcept { MoveFrom(o); }
  Shape& operator=(const Shape& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  Shape& operator=(Shape&& o) noexcept {
    if (this != &o) MoveFrom(o);
    return *this;
  }
  Shape& operator=(std::initializer_list<int64_t> dims) {
    assign(dims.begin(), dims.end());
    return *this;
  }
  ~Shape() = default;

  operator std::vector<int64_t>() const { return std::vector<int64_t>(begin(), end()); }  // NOLINT
  std::vector<int64_t> to_vector() const { return *this; }

  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  size_t capacity() const noexcept { return heap_ ? heap_cap_ : kInlineRank; }
  size_t max_size() const noexcept { return size_t{1} << 30; }
  int64_t* data() noexcept { return heap_ ? heap_.get() : inline_; }
  const int64_t* data() const noexcept { return heap_ ? heap_.get() : inline_; }

  int64_t& operator[](size_t i) { return data()[i]; }
  const int64_t& operator[](size_t i) const { return data()[i]; }
  int64_t& at(size_t i) {
    if (i >= size_) throw std::out_of_range("Shape::at");
    return data()[i];
  }
  const int64_t& at(size_t i) const {
    if (i >= size_) throw std::out_of_range("Shape::at");
    return data()[i];
  }
  int64_t& front() { return data()[0]; }
  const int64_t& front() const { return data()[0]; }
  int64_t& back() { return data()[size_ - 1]; }
  const int64_t& back() const { return data()[size_ - 1]; }

  iterator begin() noexcept { return data(); }
  iterator end() noexcept { return data() + size_; }
  const_iterator begin() const noexcept { return data(); }
  const_iterator end() const noexcept { return data() + size_; }
  const_iterator cbegin() const noexcept { return begin(); }
  const_iterator cend() const noexcept { return end(); }
  reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
  reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }
  const_reverse_iterator crbegin() const noexcept { return rbegin(); }
  const_reverse_iterator crend() const noexcept { return rend(); }

  void reserve(size_t n) {
    if (n <= capacity()) return;
    auto bigger = std::make_unique<int64_t[]>(n);
    std::copy(begin(), end(), bigger.get());
    heap_ = std::move(bigger);
    heap_cap_ = n;
  }
  void clear() noexcept { size_ = 0; }
  void resize(size_t n) { resize(n, 0); }
  void resize(size_t n, int64_t value) {
    if (n > capacity()) reserve(std::max(n, 2 * capacity()));
    if (n > size_) std::fill(data() + size_, data() + n, value);
    size_ = n;
  }
  void push_back(int64_t v) {
    if (size_ == capacity()) reserve(2 * capacity());
    data()[size_++] = v;
  }
  int64_t& emplace_back(int64_t v) {
    push_back(v);
    return back();
  }
  void pop_back() { --size_; }

  void assign(size_t n, int64_t value) {
    clear();
    resize(n, value);
  }
  template <std::input_iterator It>
  void assign(It first, It last) {
    if constexpr (std::forward_iterator<It>) {
      const size_t n = static_cast<size_t>(std::distance(first, last));
      if (n > capacity()) {  // first/last cannot point into *this: it is too small
        heap_ = std::make_unique<int64_t[]>(n);
        heap_cap_ = n;
      }
      int64_t* d = data();
      for (size_t i = 0; i < n; ++i, ++first) d[i] = static_cast<int64_t>(*first);
      size_ = n;
    } else {
      clear();
      for (; first != last; ++first) push_back(static_cast<int64_t>(*first));
    }
  }
  void assign(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }

  iterator insert(const_iterator pos, int64_t v) { return insert(pos, size_t{1}, v); }
  iterator insert(const_iterator pos, size_t n, int64_t v) {
    size_t at = static_cast<size_t>(pos - begin());
    size_t old = size_;
    resize(size_ + n);
    std::move_backward(data() + at, data() + old, data() + old + n);
    std::fill(data() + at, data() + at + n, v);
    return data() + at;
  }
  template <std::input_iterator It>
  iterator insert(const_iterator pos, It first, It last) {
    size_t at = static_cast<size_t>(pos - begin());
    Shape tail(begin() + at, end());  // first/last may point into *this
    Shape mid(first, last);
    resize(at);
    for (int64_t v : mid) push_back(v);
    for (int64_t v : tail) push_back(v);
    return data() + at;
  }
  iterator insert(const_iterator pos, std::initializer_list<int64_t> dims) { return insert(pos, dims.begin(), dims.end()); }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    size_t a = static_cast<size_t>(first - begin()), b = static_cast<size_t>(last - begin());
    std::move(data() + b, data() + size_, data() + a);
    size_ -= b - a;
    return data() + a;
  }
  void swap(Shape& o) noexcept {
    Shape t(std::move(o));
    o = std::move(*this);
    *this = std::move(t);
  }

  friend bool operator==(const Shape& a, const Shape& b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }
  friend std::strong_ordering operator<=>(const Shape& a, const Shape& b) {
    return std::lexicographical_compare_three_way(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  void MoveFrom(Shape& o) noexcept {
    size_ = o.size_;
    if (o.heap_) {
      heap_ = std::move(o.heap_);
      heap_cap_ = o.heap_cap_;
    } else {
      heap_.reset();
      std::copy(o.inline_, o.inline_ + o.size_, inline_);
    }
    o.size_ = 0;
    o.heap_cap_ = 0;
  }

  size_t size_ = 0;
  size_t heap_cap_ = 0;
  std::unique_ptr<int64_t[]> heap_;  // set when the rank outgrew kInlineRank
  int64_t inline_[kInlineRank];
};

inline void swap(Shape& a, Shape& b) noexcept { a.swap(b); }

// One dimension of a declared shape: a fixed size, or a symbolic name ("batch"), or unknown.
// Part of the public API because Session::inputs()/outputs() describe a model's inputs and
// outputs with it (ValueInfo::shape, inferloop/session.h); the engine uses it for every
// declared value type too.
//   value >= 0           a fixed size (symbol empty)
//   value < 0, symbol    a named dimension the caller chooses at run time ("batch", "seq")
//   value < 0, no symbol unknown
struct Dim {
  int64_t value = -1;   // >= 0 when fixed
  std::string symbol;   // set when symbolic
};

}  // namespace inferloop
