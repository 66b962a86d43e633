// One pass of NVPTX's back end left out: LLVM 19 offers no option for it,
// so an OptPassGate on the context says no to it by name (the gate that
// -opt-bisect-limit uses). See `skip_nary_reassociation` in src/lib.rs for
// why.
#include "llvm-c/Core.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/OptBisect.h"

namespace {
class SkipNaryReassociation final : public llvm::OptPassGate {
public:
  bool shouldRunPass(const llvm::StringRef pass, llvm::StringRef) override {
    return pass != "Nary reassociation";
  }
  bool isEnabled() const override { return true; }
};
} // namespace

extern "C" void tilec_skip_nary_reassociation(LLVMContextRef context) {
  // Stateless, so one gate serves every context and thread.
  static SkipNaryReassociation gate;
  llvm::unwrap(context)->setOptPassGate(gate);
}
