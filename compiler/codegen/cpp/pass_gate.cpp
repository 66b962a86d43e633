// One pass of NVPTX's back end left out: LLVM 19 offers no option for it,
// so an OptPassGate on the context says no to it by name (the gate that
// -opt-bisect-limit uses; with it set, that option no longer applies to
// these contexts). See `skip_nary_reassociation` in src/lib.rs for why.
#include "llvm-c/Core.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/OptBisect.h"

namespace {
class SkipNaryReassociation final : public llvm::OptPassGate {
public:
  bool shouldRunPass(const llvm::StringRef pass, llvm::StringRef) override {
    // LLVM 19's legacy pass manager asks by the pass's name; later LLVMs
    // ask by its argument. A PTX snapshot (compiler/cli/tests/pipeline,
    // fold_ptx) changes if the pass comes back.
    return pass != "Nary reassociation" && pass != "nary-reassociate";
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
