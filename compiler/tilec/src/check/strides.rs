//! Stride symbols: a tensor parameter's strides as run-time names of their
//! own (`A.stride.0`) and its row mode's padded extent (`A.padded.1`), and
//! what the rest of the compiler asks of them: their values on the
//! caller's buffers, which facts aligned copies make hold, how far a
//! kernel may address (docs/design/strides.md).

use super::program::{Kernel, ParamKind};
use tilec_layout::{Fact, Int, Layout};

/// A stride of a tensor parameter as a name of its own: `A.stride.0` for
/// the first non-constant leaf of A's flattened strides. Views index
/// through the symbol while the guards compare coordinates with the
/// extents (the row mode's with its padded extent, `A.padded.1`), so that
/// a launch may pass the pitch of a copy of the tensor. On the caller's
/// buffer it is the stride the parameter declares (`declared`, over the
/// extents).
#[derive(Clone, Debug, PartialEq)]
pub struct StrideSymbol {
    pub name: String,
    /// The parameter, by index.
    pub param: usize,
    /// The leaf, by index in the parameter's flattened layout.
    pub leaf: usize,
    pub declared: Int,
    /// `A.padded.i`: not a stride but how far along leaf `i` (the mode of
    /// stride 1, declared as its extent) a guarded load may read; on a
    /// copy, its rows' pitch, the rest of each row zero.
    pub padded: bool,
    /// No launch copies the tensor: the kernel writes it, or each block
    /// reads elements of its own (a copy would move as many bytes as the
    /// kernel does). The symbol is then its declared stride at every
    /// launch, and lowering computes with that, so that the tensor's
    /// addresses share their terms with the guards and with the other
    /// tensors declared alike; it is no run-time integer of the kernel.
    pub in_place: bool,
}

impl Kernel {
    /// The names a launch binds from its `--dims`: the extents, without
    /// the stride symbols the runtime computes from them.
    pub fn dims(&self) -> &[String] {
        let symbols = self.strides.iter().filter(|s| !s.in_place).count();
        &self.extents[..self.extents.len() - symbols]
    }

    /// Whether `name` is a value the kernel may be given at run time: an
    /// extent or a stride symbol (an in-place one too: lowering reads it
    /// as its declared value, `lower_with`).
    pub fn is_run_time(&self, name: &str) -> bool {
        self.extents.iter().any(|e| e == name) || self.strides.iter().any(|s| s.name == name)
    }

    /// Fact `f` as it reads on the caller's buffers, where each stride
    /// symbol is the stride its parameter declares: two facts alike there
    /// (`A.stride.0 % 8 == 0`, `B.stride.0 % 8 == 0`: both `K % 8 == 0`)
    /// hold for the same launches.
    pub fn as_declared(&self, f: &Fact) -> Fact {
        self.declared_values(|_| true)
            .fold(f.clone(), |f, (n, v)| f.replace(n, v))
    }

    /// Fact `f` with the stride symbols that are always their declared
    /// strides ([`StrideSymbol::in_place`]) replaced by those.
    pub fn in_place(&self, f: &Fact) -> Fact {
        self.declared_values(|s| s.in_place)
            .fold(f.clone(), |f, (n, v)| f.replace(n, v))
    }

    /// The symbols `which` picks, each with its declared value.
    fn declared_values(
        &self,
        which: impl Fn(&StrideSymbol) -> bool,
    ) -> impl Iterator<Item = (&str, &Int)> {
        self.strides
            .iter()
            .filter(move |s| which(s))
            .map(|s| (s.name.as_str(), &s.declared))
    }

    /// The elements the kernel may address in tensor parameter `p`'s
    /// buffer: the cosize of its layout as the kernel indexes it (its
    /// stride symbols, and its padded extent for its mode's). On the
    /// caller's buffer that is the declared cosize; on a copy, the copy's
    /// length.
    pub fn reach(&self, p: usize) -> Option<Int> {
        let ParamKind::Tensor { layout, .. } = &self.params[p].kind else {
            return None;
        };
        let symbol = |leaf: usize, padded: bool, declared: Int| {
            self.strides
                .iter()
                .find(|s| s.param == p && s.leaf == leaf && s.padded == padded && !s.in_place)
                .map_or(declared, |s| Int::var(&s.name))
        };
        let shape = layout.shape().leaves().into_iter().enumerate();
        let shape = layout
            .shape()
            .unflatten_like(&mut shape.map(|(i, x)| symbol(i, true, x)));
        let stride = layout.stride().leaves().into_iter().enumerate();
        let stride = layout
            .stride()
            .unflatten_like(&mut stride.map(|(i, x)| symbol(i, false, x)));
        Some(Layout::new(shape, stride).ok()?.cosize())
    }

    /// Whether fact `f` holds on aligned copies of the tensors it is about,
    /// at any extents where the runtime makes them (`staging::whole`:
    /// compact layouts, up to 2^40 bytes): it says that a constant divides a stride
    /// symbol or padded extent of a tensor the runtime can copy into rows
    /// (one with a padded extent: `plan::copies`), and the constant
    /// divides 128 bytes' elements, the copy's pitch, of which every such
    /// symbol is a multiple there. A block fact (`x <= A.padded.0`) is not.
    pub fn stageable(&self, f: &Fact) -> bool {
        let Fact::Divides { divisor, dividend } = f else {
            return false;
        };
        let (Some(w), Some(name)) = (divisor.as_static(), dividend.as_var()) else {
            return false;
        };
        let Some(s) = self.strides.iter().find(|s| s.name == name && !s.in_place) else {
            return false;
        };
        let rows = self
            .strides
            .iter()
            .any(|t| t.param == s.param && t.padded && !t.in_place);
        let ParamKind::Tensor { elem, .. } = &self.params[s.param].kind else {
            return false;
        };
        rows && w > 0 && (128 / elem.bytes()) % w == 0
    }

    /// Integer `v` with the in-place stride symbols replaced, as
    /// [`Kernel::in_place`] does for facts: what the runtime evaluates
    /// names extents and the launch's stride symbols only.
    pub fn in_place_int(&self, v: &Int) -> Int {
        self.declared_values(|s| s.in_place)
            .fold(v.clone(), |v, (n, x)| v.replace(n, x))
    }
}
