// Immutable values that many objects hold alike, kept once and shared by every copy.
//
// SharedValue<T> holds a T that is set as a whole and read as a const T: copying it copies a
// pointer, and an empty T takes no block at all. SharedLabels is the form for an object's
// labels: discovery keeps a pod's labels once, and every view made of that pod in every
// round shares them instead of copying the map (three allocations per label). SharedVector
// is the form for a list that is read far more often than it is set.
#ifndef KUBESTAT_CORE_SHARED_VALUE_H_
#define KUBESTAT_CORE_SHARED_VALUE_H_

#include <cstddef>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"

namespace kubestat {

// T needs empty() and operator==.
template <typename T>
class SharedValue {
 public:
  SharedValue() = default;
  // NOLINTNEXTLINE(google-explicit-constructor): assigned from a T like one
  SharedValue(T value)
      : value_(value.empty() ? nullptr : std::make_shared<const T>(std::move(value))) {}
  const T& get() const ABSL_ATTRIBUTE_LIFETIME_BOUND { return value_ ? *value_ : Empty(); }
  // NOLINTNEXTLINE(google-explicit-constructor): read where a T is
  operator const T&() const ABSL_ATTRIBUTE_LIFETIME_BOUND { return get(); }
  const T* operator->() const ABSL_ATTRIBUTE_LIFETIME_BOUND { return &get(); }
  bool empty() const { return value_ == nullptr; }
  // Whether both hold the one block (true for two empty values): equal without comparing.
  bool SharesWith(const SharedValue& other) const { return value_ == other.value_; }

  friend bool operator==(const SharedValue& a, const SharedValue& b) {
    return a.value_ == b.value_ || a.get() == b.get();
  }

 private:
  static const T& Empty() {
    static const T kEmpty;
    return kEmpty;
  }
  std::shared_ptr<const T> value_;
};

// Labels by key, shared. Read like the map (iteration, find, size); written as a whole, from
// a map or from a braced list of pairs.
class SharedLabels : public SharedValue<std::map<std::string, std::string>> {
 public:
  using Map = std::map<std::string, std::string>;
  using const_iterator = Map::const_iterator;
  using value_type = Map::value_type;

  SharedLabels() = default;
  // NOLINTNEXTLINE(google-explicit-constructor): assigned from a map like one
  SharedLabels(Map labels) : SharedValue(std::move(labels)) {}
  SharedLabels(std::initializer_list<value_type> labels) : SharedValue(Map(labels)) {}

  const_iterator begin() const { return get().begin(); }
  const_iterator end() const { return get().end(); }
  size_t size() const { return get().size(); }
  const_iterator find(const std::string& key) const { return get().find(key); }
  size_t count(const std::string& key) const { return get().count(key); }
  const std::string& at(const std::string& key) const ABSL_ATTRIBUTE_LIFETIME_BOUND {
    return get().at(key);
  }
  // These labels with `key` set to `value` (a new block; this one is unchanged).
  SharedLabels With(const std::string& key, std::string value) const {
    Map labels = get();
    labels[key] = std::move(value);
    return labels;
  }
};

// A list, shared. Read like the vector; written as a whole.
template <typename E>
class SharedVector : public SharedValue<std::vector<E>> {
 public:
  using Vector = std::vector<E>;
  using const_iterator = typename Vector::const_iterator;
  using value_type = E;

  SharedVector() = default;
  // NOLINTNEXTLINE(google-explicit-constructor): assigned from a vector like one
  SharedVector(Vector items) : SharedValue<Vector>(std::move(items)) {}
  SharedVector(std::initializer_list<E> items) : SharedValue<Vector>(Vector(items)) {}

  const_iterator begin() const { return this->get().begin(); }
  const_iterator end() const { return this->get().end(); }
  size_t size() const { return this->get().size(); }
  const E& operator[](size_t i) const ABSL_ATTRIBUTE_LIFETIME_BOUND { return this->get()[i]; }
};

}  // namespace kubestat

#endif  // KUBESTAT_CORE_SHARED_VALUE_H_
