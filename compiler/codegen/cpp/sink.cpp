// Moves each instruction whose result only a later block needs into that
// block, so that a guarded store's address and value are computed where
// the store is, not before every branch. The builder computes a
// statement's values at its start; this shortens their lives.
//
// LLVM's `sink` pass did this before. It asks alias analysis, for every
// load, about every store below it in its block: on the guarded entries of
// the tensor-core GEMMs, tens of thousands of questions, 5% of a build.
// Here a load moves only when nothing below it in its block may write
// memory, which needs no question and moves the same instructions: the
// PTX of every example and tests/run kernel, for sm_80 and sm_90, is the
// same byte for byte. (A `--checked` build differs: each access there
// branches to its check, and `sink` let some loads pass stores that alias
// analysis proved apart.) The rules otherwise
// are `sink`'s: the block must dominate the target; a target with other
// predecessors takes no load and must be in the block's own loop (nothing
// moves into a loop, where it would run again each trip); anything with
// side effects stays, and of calls only those LLVM may speculate move.
#include "llvm-c/Core.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

using namespace llvm;

namespace {

// Whether `inst` may move at all; `write_below`: whether an instruction
// after it in its block may write memory.
bool movable(const Instruction &inst, bool write_below) {
  if (inst.isTerminator() || isa<PHINode>(inst) || isa<AllocaInst>(inst) ||
      inst.isEHPad() || inst.mayWriteToMemory() || inst.mayThrow() ||
      !inst.willReturn())
    return false;
  if (inst.mayReadFromMemory() && write_below)
    return false;
  if (const auto *call = dyn_cast<CallBase>(&inst))
    // Only what could run anywhere: a special register, `fma`, `sqrt`.
    // An mma.sync, say, is neither convergent nor reads memory in LLVM
    // 19, but moved behind a thread's guard only part of the warp would
    // run it.
    return call->hasFnAttr(Attribute::Speculatable);
  return true;
}

// The block `inst` may move to: the nearest common dominator of its uses,
// raised until acceptable; null when that is its own block.
BasicBlock *target(const Instruction &inst, const DominatorTree &dt, const LoopInfo &li) {
  const BasicBlock *home = inst.getParent();
  BasicBlock *to = nullptr;
  for (const Use &use : inst.uses()) {
    auto *user = cast<Instruction>(use.getUser());
    BasicBlock *at = user->getParent();
    if (auto *phi = dyn_cast<PHINode>(user))
      at = phi->getIncomingBlock(use);
    if (!dt.isReachableFromEntry(at))
      continue;
    to = to ? dt.findNearestCommonDominator(to, at) : at;
    if (!dt.dominates(home, to))
      return nullptr;
  }
  const Loop *home_loop = li.getLoopFor(home);
  bool load = inst.mayReadFromMemory() && !inst.hasMetadata(LLVMContext::MD_invariant_load);
  while (to && to != home) {
    if (to->getUniquePredecessor() == home)
      return to;
    const Loop *loop = li.getLoopFor(to);
    if (!load && (loop == nullptr || loop == home_loop))
      return to;
    to = dt.getNode(to)->getIDom()->getBlock();
  }
  return nullptr;
}

bool sink_block(BasicBlock &block, const DominatorTree &dt, const LoopInfo &li) {
  if (!dt.isReachableFromEntry(&block))
    return false;
  bool moved = false;
  bool write_below = false;
  // Bottom up, so that an instruction's users have moved before it is
  // looked at.
  for (Instruction &inst : make_early_inc_range(reverse(block))) {
    if (inst.isDebugOrPseudoInst())
      continue;
    bool may_move = movable(inst, write_below);
    write_below |= inst.mayWriteToMemory();
    if (!may_move)
      continue;
    if (BasicBlock *to = target(inst, dt, li)) {
      inst.moveBefore(&*to->getFirstInsertionPt());
      moved = true;
    }
  }
  return moved;
}

} // namespace

extern "C" void tilec_sink(LLVMModuleRef module) {
  for (Function &function : *unwrap(module)) {
    if (function.isDeclaration())
      continue;
    // Moving instructions changes no edge, so one analysis serves every
    // round.
    DominatorTree dt(function);
    LoopInfo li(dt);
    bool moved = true;
    while (moved) {
      moved = false;
      for (BasicBlock &block : function)
        moved |= sink_block(block, dt, li);
    }
  }
}
