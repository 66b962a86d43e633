// inkwell's `Target::initialize_native` and `initialize_all` call wrappers
// that llvm-sys compiles from its wrappers/target.c, one object that names
// every target LLVM was built with. Linking it pulled all of them into
// tilec (X86, AMDGPU, AArch64, Hexagon, ...), and their static
// constructors ran at every start. tilec initializes NVPTX alone
// (`compile_variant` in src/lib.rs), so llvm-sys's wrappers are left out
// (its feature `disable-alltargets-init`) and these stand in for them.
// Nothing calls them: the native ones report failure, the others do
// nothing.
extern "C" {
void LLVM_InitializeAllTargetInfos(void) {}
void LLVM_InitializeAllTargets(void) {}
void LLVM_InitializeAllTargetMCs(void) {}
void LLVM_InitializeAllAsmPrinters(void) {}
void LLVM_InitializeAllAsmParsers(void) {}
void LLVM_InitializeAllDisassemblers(void) {}
int LLVM_InitializeNativeTarget(void) { return 1; }
int LLVM_InitializeNativeAsmParser(void) { return 1; }
int LLVM_InitializeNativeAsmPrinter(void) { return 1; }
int LLVM_InitializeNativeDisassembler(void) { return 1; }
}
