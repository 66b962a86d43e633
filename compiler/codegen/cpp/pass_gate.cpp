// One pass of NVPTX's back end left out, and the cleanup after it: LLVM 19
// offers no option for them, so an OptPassGate on the context says no to
// them by name (the gate that
// -opt-bisect-limit uses; with it set, that option no longer applies to
// these contexts). See `skip_nary_reassociation` in src/lib.rs for why.
#include "llvm-c/Core.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/OptBisect.h"

namespace {
// Set when the gate has just refused n-ary reassociation, on this thread
// (each variant is compiled on a thread of its own, one pass at a time).
thread_local bool nary_just_refused = false;

class SkipNaryReassociation final : public llvm::OptPassGate {
public:
  bool shouldRunPass(const llvm::StringRef pass, llvm::StringRef) override {
    // LLVM 19's legacy pass manager asks by the pass's name; later LLVMs
    // ask by its argument. A PTX snapshot (compiler/cli/tests/pipeline,
    // fold_ptx) changes if the pass comes back.
    if (pass == "Nary reassociation" || pass == "nary-reassociate") {
      nary_just_refused = true;
      return false;
    }
    // NVPTX follows the pass with a round of early CSE to clean up after
    // it; with nothing to clean up, that round would only redo the one
    // before n-ary reassociation (the PTX of every example is the same
    // byte for byte without it).
    bool cleanup = nary_just_refused && (pass == "Early CSE" || pass == "early-cse");
    nary_just_refused = false;
    return !cleanup;
  }
  bool isEnabled() const override { return true; }
};
} // namespace

extern "C" void tilec_skip_nary_reassociation(LLVMContextRef context) {
  // Stateless, so one gate serves every context and thread; never freed,
  // so no context can outlive it.
  static auto *gate = new SkipNaryReassociation;
  llvm::unwrap(context)->setOptPassGate(*gate);
}
