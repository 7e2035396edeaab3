//! The classification: one table of symbol patterns to categories, plus call-chain context
//! rules for the few symbols whose own name does not say what they work for. Pure data and
//! one pure function; docs/PROFILE.md reproduces the table for readers.
//!
//! How a sample is classified ([`classify`]):
//!
//! 1. A sample taken in user mode is [`Wirebench`](ProfileCategory::Wirebench) if the
//!    process is a wirebench process, else [`Other`](ProfileCategory::Other).
//! 2. A kernel sample is classified by its own (innermost) symbol: the first rule of
//!    [`KERNEL_RULES`] whose pattern matches decides; no match is `Other`, and so is an
//!    address with no symbol.
//! 3. If that rule says [`Class::Ambiguous`] (a generic `memcpy`, a `memset`, the
//!    interrupt-enabling unlock where an hrtimer sample lands after an interrupts-off
//!    section, a retpoline thunk), the callers decide, nearest first, up to
//!    [`CONTEXT_DEPTH`] kernel frames: the first caller that matches a [`CONTEXT_RULES`]
//!    entry for that ambiguity gives its category; otherwise the first caller with a
//!    definite category ([`Class::Is`]) gives its own. The walk stops at the first user
//!    frame; with no decision, the ambiguity's [`Ambiguity::fallback`] applies.
//!
//! So a `memcpy` under `tcp_sendmsg` is copy (a context rule), a `memcpy` under
//! `__skb_clone` is memory management (the nearest definite caller), and
//! `_raw_spin_unlock_irqrestore` under `try_to_wake_up` is the scheduler.

use wirebench_model::profile::ProfileCategory;
use ProfileCategory as C;

/// How a rule matches a symbol name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// The whole name.
    Exact(&'static str),
    /// The name starts with this.
    Prefix(&'static str),
    /// The name contains this.
    Contains(&'static str),
}

impl Pattern {
    /// Whether `name` matches. A compiler suffix (`.constprop.0`, `.isra.0`, `.cold`) is
    /// ignored for `Exact`.
    pub fn matches(self, name: &str) -> bool {
        match self {
            Pattern::Exact(p) => name.split('.').next() == Some(p),
            Pattern::Prefix(p) => name.starts_with(p),
            Pattern::Contains(p) => name.contains(p),
        }
    }

    /// The pattern's text.
    pub fn text(self) -> &'static str {
        match self {
            Pattern::Exact(p) | Pattern::Prefix(p) | Pattern::Contains(p) => p,
        }
    }
}

/// Symbols whose category depends on who called them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ambiguity {
    /// Generic byte movers (`memcpy`, `memmove`).
    DataMove,
    /// Generic fills (`memset`, `clear_user`).
    Fill,
    /// Where interrupts are enabled again (`_raw_spin_unlock_irqrestore`, ...): an
    /// hrtimer-driven sample of an interrupts-off section lands here.
    IrqEnable,
    /// Retpoline and return thunks, `__fentry__`-style trampolines.
    Thunk,
}

impl Ambiguity {
    /// The category when no caller decides.
    pub fn fallback(self) -> ProfileCategory {
        match self {
            Ambiguity::DataMove => C::Copy,
            Ambiguity::Fill => C::MemoryManagement,
            Ambiguity::IrqEnable => C::Locks,
            Ambiguity::Thunk => C::Other,
        }
    }
}

/// What a rule says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// This category.
    Is(ProfileCategory),
    /// The callers decide (see the module docs).
    Ambiguous(Ambiguity),
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// What it matches.
    pub pattern: Pattern,
    /// What it says.
    pub class: Class,
}

/// How many kernel callers an ambiguous symbol's classification looks at.
pub const CONTEXT_DEPTH: usize = 32;

mod table;

pub use table::{CONTEXT_RULES, KERNEL_RULES};

/// The table's verdict on one kernel symbol, if a rule matches.
pub fn class_of(symbol: &str) -> Option<Class> {
    KERNEL_RULES
        .iter()
        .find(|r| r.pattern.matches(symbol))
        .map(|r| r.class)
}

/// One frame of a sample, as the classification sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameSym<'s> {
    /// A kernel address and its symbol, if it resolved.
    Kernel(Option<&'s str>),
    /// A user address; `wirebench` if the process is a wirebench process.
    User {
        /// Whether the sampled process is a wirebench process.
        wirebench: bool,
    },
}

/// The category of a sample from its frames, innermost first (the sample's own address,
/// then its callers). See the module docs for the rules.
pub fn classify<'s>(frames: impl IntoIterator<Item = FrameSym<'s>>) -> ProfileCategory {
    classify_by(frames, class_of)
}

/// [`classify`] with the table lookup supplied: `lookup(name)` must return what
/// [`class_of`]`(name)` does (a caller caches it per symbol: the table is a linear scan).
pub fn classify_by<'s>(
    frames: impl IntoIterator<Item = FrameSym<'s>>,
    mut lookup: impl FnMut(&'s str) -> Option<Class>,
) -> ProfileCategory {
    let mut frames = frames.into_iter();
    let ambiguity = match frames.next() {
        None | Some(FrameSym::Kernel(None)) => return C::Other,
        Some(FrameSym::User { wirebench: true }) => return C::Wirebench,
        Some(FrameSym::User { wirebench: false }) => return C::Other,
        Some(FrameSym::Kernel(Some(name))) => match lookup(name) {
            None => return C::Other,
            Some(Class::Is(c)) => return c,
            Some(Class::Ambiguous(a)) => a,
        },
    };
    for frame in frames.take(CONTEXT_DEPTH) {
        match frame {
            FrameSym::User { .. } => break,
            FrameSym::Kernel(None) => {}
            FrameSym::Kernel(Some(name)) => {
                if let Some(&(_, _, c)) = CONTEXT_RULES
                    .iter()
                    .find(|(a, pat, _)| *a == ambiguity && pat.matches(name))
                {
                    return c;
                }
                if let Some(Class::Is(c)) = lookup(name) {
                    return c;
                }
            }
        }
    }
    ambiguity.fallback()
}

/// The table as Markdown (docs/PROFILE.md embeds this between its markers; a test keeps
/// the two equal).
pub fn table_markdown() -> String {
    let mut out = String::from("| # | pattern | match | category |\n|---|---|---|---|\n");
    for (i, r) in KERNEL_RULES.iter().enumerate() {
        let kind = match r.pattern {
            Pattern::Exact(_) => "exact",
            Pattern::Prefix(_) => "prefix",
            Pattern::Contains(_) => "contains",
        };
        let class = match r.class {
            Class::Is(c) => format!("`{}`", c.key()),
            Class::Ambiguous(a) => {
                format!("callers decide ({a:?}; fallback `{}`)", a.fallback().key())
            }
        };
        out.push_str(&format!(
            "| {} | `{}` | {kind} | {class} |\n",
            i + 1,
            r.pattern.text()
        ));
    }
    out.push_str(
        "\nContext rules (checked at each caller, nearest first, before its own row):\n\n",
    );
    out.push_str("| ambiguity | caller pattern | match | category |\n|---|---|---|---|\n");
    for (a, pat, c) in CONTEXT_RULES {
        let kind = match pat {
            Pattern::Exact(_) => "exact",
            Pattern::Prefix(_) => "prefix",
            Pattern::Contains(_) => "contains",
        };
        out.push_str(&format!(
            "| {a:?} | `{}` | {kind} | `{}` |\n",
            pat.text(),
            c.key()
        ));
    }
    out
}

#[cfg(test)]
mod tests;
