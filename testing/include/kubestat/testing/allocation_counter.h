// Heap allocations counted, to prove that a piece of code allocates nothing. Linking
// kubestat_test_allocation_counter replaces the global operator new and delete (every
// non-aligned form, pairing malloc with free, which the sanitizers check) in that test
// executable only; a CountedAllocations counts the calling thread's allocations while it
// lives. One per thread at a time.
#ifndef KUBESTAT_TESTING_ALLOCATION_COUNTER_H_
#define KUBESTAT_TESTING_ALLOCATION_COUNTER_H_

namespace kubestat::testing {

class CountedAllocations {
 public:
  CountedAllocations();
  ~CountedAllocations();
  CountedAllocations(const CountedAllocations&) = delete;
  CountedAllocations& operator=(const CountedAllocations&) = delete;

  // This thread's allocations since construction.
  int count() const;
};

}  // namespace kubestat::testing

#endif  // KUBESTAT_TESTING_ALLOCATION_COUNTER_H_
