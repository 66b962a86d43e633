// Three of NVPTX's IR passes left out of the back end: straight-line
// strength reduction, n-ary reassociation and the rounds of early CSE
// after it. LLVM 19 offers no option for them, so an OptPassGate on the
// context says no to them by name (the gate that -opt-bisect-limit uses;
// with it set, that option no longer applies to these contexts). See
// `skip_straight_line_passes` in src/lib.rs for why.
#include "llvm-c/Core.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/OptBisect.h"

namespace {
// Whether the gate has refused n-ary reassociation in the function this
// thread is compiling: a module goes through the back end on one thread,
// one function and one pass at a time, and straight-line strength
// reduction, the first of the passes gated here, starts each function
// afresh (NVPTX runs it, early CSE, n-ary reassociation, early CSE, and
// later a last early CSE).
thread_local bool nary_refused = false;

class SkipStraightLinePasses final : public llvm::OptPassGate {
public:
  bool shouldRunPass(const llvm::StringRef pass, llvm::StringRef) override {
    // LLVM 19's legacy pass manager asks by the pass's name; later LLVMs
    // ask by its argument. A PTX snapshot (compiler/cli/tests/pipeline,
    // fold_ptx) changes if the pass comes back.
    if (pass == "Straight line strength reduction" || pass == "slsr") {
      nary_refused = false;
      return false;
    }
    if (pass == "Nary reassociation" || pass == "nary-reassociate") {
      nary_refused = true;
      return false;
    }
    // NVPTX cleans up after the pass with a round of early CSE, and after
    // loop strength reduction (disabled: see src/lib.rs) with another.
    // With nothing to clean up they only redo the round before n-ary
    // reassociation: the PTX of every example and tests/run kernel is the
    // same byte for byte without them.
    return !(nary_refused && (pass == "Early CSE" || pass == "early-cse"));
  }
  bool isEnabled() const override { return true; }
};
} // namespace

extern "C" void tilec_skip_straight_line_passes(LLVMContextRef context) {
  // Its state is per thread, so one gate serves every context and thread;
  // never freed, so no context can outlive it.
  static auto *gate = new SkipStraightLinePasses;
  llvm::unwrap(context)->setOptPassGate(*gate);
}
