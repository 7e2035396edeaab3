//! Kernel symbols from `/proc/kallsyms`: text symbols sorted by address, looked up by binary
//! search (the symbol with the greatest address at or below the sample's).
//!
//! Without privilege (`kernel.kptr_restrict` with no `CAP_SYSLOG`), the file lists every
//! symbol at address zero: [`KernelSymbolTable::load`] detects that and says so
//! ([`KernelSymbols::AddressesHidden`]) rather than resolving every sample to the first
//! symbol.

use wirebench_model::profile::KernelSymbols;

/// The farthest a sample may lie past the last text symbol and still be attributed to it.
const MAX_PAST_LAST_BYTES: u64 = 1 << 20;

/// Kernel text symbols, sorted by address.
#[derive(Debug, Default)]
pub struct KernelSymbolTable {
    /// (address, index into `names`), ascending by address.
    addrs: Vec<(u64, u32)>,
    names: Vec<Box<str>>,
}

impl KernelSymbolTable {
    /// Reads `/proc/kallsyms`; the table is empty unless the status is `Resolved`.
    pub fn load() -> (KernelSymbolTable, KernelSymbols) {
        match std::fs::read_to_string("/proc/kallsyms") {
            Ok(text) => KernelSymbolTable::parse(&text),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read /proc/kallsyms");
                (KernelSymbolTable::default(), KernelSymbols::Unreadable)
            }
        }
    }

    /// Parses the text of `/proc/kallsyms` (`address type name [module]` per line); only
    /// text symbols (`t`, `T`, `w`, `W`) are kept.
    pub fn parse(text: &str) -> (KernelSymbolTable, KernelSymbols) {
        let mut table = KernelSymbolTable::default();
        let mut lines = 0usize;
        for line in text.lines() {
            let mut f = line.split_ascii_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            lines += 1;
            if !matches!(kind, "t" | "T" | "w" | "W") {
                continue;
            }
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            if addr == 0 {
                continue;
            }
            let Ok(idx) = u32::try_from(table.names.len()) else {
                break;
            };
            table.names.push(name.into());
            table.addrs.push((addr, idx));
        }
        if table.addrs.is_empty() {
            let status = if lines > 0 {
                KernelSymbols::AddressesHidden
            } else {
                KernelSymbols::Unreadable
            };
            return (KernelSymbolTable::default(), status);
        }
        table.addrs.sort_unstable_by_key(|&(a, _)| a);
        (table, KernelSymbols::Resolved)
    }

    /// The symbol containing `addr`, if any.
    pub fn lookup(&self, addr: u64) -> Option<&str> {
        let i = self.addrs.partition_point(|&(a, _)| a <= addr);
        if i == 0 {
            return None;
        }
        let (start, idx) = self.addrs[i - 1];
        if i == self.addrs.len() && addr - start > MAX_PAST_LAST_BYTES {
            return None;
        }
        self.names.get(idx as usize).map(|n| &**n)
    }

    /// The symbol named `name` and its address (a linear scan: tests and diagnostics).
    pub fn address_of(&self, name: &str) -> Option<u64> {
        self.addrs
            .iter()
            .find(|&&(_, i)| &*self.names[i as usize] == name)
            .map(|&(a, _)| a)
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.addrs.len()
    }

    /// True if there is no symbol.
    pub fn is_empty(&self) -> bool {
        self.addrs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
ffffffff81000000 T _text
ffffffff81000080 T entry_SYSCALL_64
ffffffff81200000 D some_data
ffffffff81100000 t tcp_sendmsg
ffffffff81100200 T tcp_sendmsg_locked
ffffffffc0000000 t veth_xmit\t[veth]
";

    #[test]
    fn lookup_finds_the_enclosing_symbol() {
        let (t, status) = KernelSymbolTable::parse(TEXT);
        assert_eq!(status, KernelSymbols::Resolved);
        assert_eq!(t.len(), 5);
        assert_eq!(t.lookup(0xffff_ffff_8110_0000), Some("tcp_sendmsg"));
        assert_eq!(t.lookup(0xffff_ffff_8110_01ff), Some("tcp_sendmsg"));
        assert_eq!(t.lookup(0xffff_ffff_8110_0200), Some("tcp_sendmsg_locked"));
        assert_eq!(t.lookup(0xffff_ffff_8100_0090), Some("entry_SYSCALL_64"));
        assert_eq!(t.lookup(0xffff_ffff_c000_0010), Some("veth_xmit"));
        assert_eq!(t.lookup(0xffff_ffff_80ff_ffff), None);
        assert_eq!(
            t.lookup(0xffff_ffff_c100_0000),
            None,
            "far past the last symbol"
        );
        assert_eq!(t.address_of("tcp_sendmsg"), Some(0xffff_ffff_8110_0000));
    }

    #[test]
    fn hidden_addresses_are_detected() {
        let hidden = "0000000000000000 T _text\n0000000000000000 t tcp_sendmsg\n";
        let (t, status) = KernelSymbolTable::parse(hidden);
        assert_eq!(status, KernelSymbols::AddressesHidden);
        assert!(t.is_empty());
        assert_eq!(KernelSymbolTable::parse("").1, KernelSymbols::Unreadable);
    }
}
