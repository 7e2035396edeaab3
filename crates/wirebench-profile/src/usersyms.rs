//! User-space symbols of wirebench processes: the binary's own ELF symbol table (read once
//! from `/proc/self/exe`), and per process the load bias of the binary (a position-
//! independent executable is mapped at a random address) from `/proc/<pid>/maps`.
//!
//! A process is a wirebench process when its executable is the same file (device and
//! inode) as this process' own: the daemon and the client of a loopback test are both
//! recognised, whichever of them profiles. Addresses outside the binary are named by the
//! mapping they fall in (`[libc.so.6]`).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

/// The executable's text symbols and loadable segments (link-time addresses).
#[derive(Debug, Default)]
pub struct ExeSymbols {
    /// (start, end, index into `names`), ascending by start.
    syms: Vec<(u64, u64, u32)>,
    names: Vec<Box<str>>,
    /// (vaddr, file offset, file size) of each loadable segment.
    segments: Vec<(u64, u64, u64)>,
}

impl ExeSymbols {
    /// Reads the symbol table and segments of the ELF file at `path` (only the parts
    /// needed are read).
    pub fn load(path: &str) -> Option<ExeSymbols> {
        let file = std::fs::File::open(path).ok()?;
        let cache = object::ReadCache::new(file);
        let elf = object::File::parse(&cache).ok()?;
        let mut out = ExeSymbols::default();
        for seg in elf.segments() {
            let (offset, size) = seg.file_range();
            out.segments.push((seg.address(), offset, size));
        }
        for sym in elf.symbols() {
            if sym.kind() != SymbolKind::Text || sym.address() == 0 {
                continue;
            }
            let Ok(name) = sym.name() else { continue };
            let Ok(idx) = u32::try_from(out.names.len()) else {
                break;
            };
            let demangled = format!("{:#}", rustc_demangle::demangle(name));
            out.names.push(demangled.into());
            let end = sym.address().saturating_add(sym.size().max(1));
            out.syms.push((sym.address(), end, idx));
        }
        out.syms.sort_unstable_by_key(|&(a, _, _)| a);
        Some(out)
    }

    /// The symbol containing the link-time address `vaddr`.
    pub fn lookup(&self, vaddr: u64) -> Option<&str> {
        let i = self.syms.partition_point(|&(a, _, _)| a <= vaddr);
        let (_, end, idx) = *self.syms.get(i.checked_sub(1)?)?;
        (vaddr < end).then(|| &*self.names[idx as usize])
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// True if there is no symbol (a stripped binary).
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The load bias (runtime − link-time address) of a mapping of the file at `start`
    /// with file offset `offset`: the segment that holds `offset` says which link-time
    /// address the mapping's first byte has.
    fn bias(&self, start: u64, offset: u64) -> Option<u64> {
        // A mapping starts at a page boundary, which may lie before its segment's first
        // byte (and inside the previous segment's last page): take the last segment whose
        // page-aligned range holds the offset.
        let &(vaddr, seg_off, _) = self
            .segments
            .iter()
            .filter(|&&(_, off, size)| {
                off & !(PAGE - 1) <= offset && offset < off.saturating_add(size)
            })
            .max_by_key(|&&(_, off, _)| off)?;
        Some(start.wrapping_sub(vaddr.wrapping_add(offset - seg_off)))
    }
}

/// The page size mappings are aligned to (4 KiB on x86-64; larger pages only align more).
const PAGE: u64 = 4096;

/// One line of `/proc/<pid>/maps` that matters here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Executable.
    pub exec: bool,
    /// File offset of `start`.
    pub offset: u64,
    /// The file's inode (0 for anonymous mappings).
    pub inode: u64,
    /// The path's last component, if a file.
    pub name: Option<String>,
}

/// Parses the executable mappings of a `/proc/<pid>/maps` text.
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_ascii_whitespace();
            let (range, perms, offset, _dev, inode) =
                (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
            let (a, b) = range.split_once('-')?;
            let path = f.collect::<Vec<_>>().join(" ");
            let name = (!path.is_empty()).then(|| {
                let p = path.trim_end_matches(" (deleted)");
                p.rsplit('/').next().unwrap_or(p).to_owned()
            });
            Some(Mapping {
                start: u64::from_str_radix(a, 16).ok()?,
                end: u64::from_str_radix(b, 16).ok()?,
                exec: perms.contains('x'),
                offset: u64::from_str_radix(offset, 16).ok()?,
                inode: inode.parse().ok()?,
                name,
            })
        })
        .filter(|m| m.exec)
        .collect()
}

/// What is known of one sampled process.
#[derive(Debug)]
enum Process {
    /// Not a wirebench process (or gone before it could be looked at): its command name.
    Foreign { comm: String },
    /// A wirebench process: its executable mappings and the binary's bias in it.
    Wirebench {
        maps: Vec<Mapping>,
        bias: Option<u64>,
    },
}

/// User-space symbolization for the samples of one profile.
#[derive(Debug)]
pub struct UserSymbols {
    exe: ExeSymbols,
    /// (device, inode) of this process' executable.
    exe_id: Option<(u64, u64)>,
    processes: HashMap<u32, Process>,
}

/// The most processes remembered (bounded memory under a fork storm).
const MAX_PROCESSES: usize = 4096;

impl UserSymbols {
    /// Loads this process' executable symbols.
    pub fn load() -> UserSymbols {
        let exe = ExeSymbols::load("/proc/self/exe").unwrap_or_default();
        let exe_id = std::fs::metadata("/proc/self/exe")
            .ok()
            .map(|m| (m.dev(), m.ino()));
        UserSymbols {
            exe,
            exe_id,
            processes: HashMap::new(),
        }
    }

    /// The binary's symbol count (0 for a stripped binary).
    pub fn exe_symbols(&self) -> usize {
        self.exe.len()
    }

    fn process(&mut self, pid: u32) -> &Process {
        if self.processes.len() >= MAX_PROCESSES && !self.processes.contains_key(&pid) {
            self.processes.clear();
        }
        let exe_id = self.exe_id;
        let exe = &self.exe;
        self.processes.entry(pid).or_insert_with(|| {
            let id = std::fs::metadata(format!("/proc/{pid}/exe"))
                .ok()
                .map(|m| (m.dev(), m.ino()));
            if id.is_none() || id != exe_id {
                let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .map(|c| c.trim().to_owned())
                    .unwrap_or_else(|_| "exited".to_owned());
                return Process::Foreign { comm };
            }
            let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))
                .map(|t| parse_maps(&t))
                .unwrap_or_default();
            let ino = exe_id.map_or(0, |(_, i)| i);
            let bias = maps
                .iter()
                .find(|m| m.inode == ino)
                .and_then(|m| exe.bias(m.start, m.offset));
            Process::Wirebench { maps, bias }
        })
    }

    /// Whether `pid` is a wirebench process.
    pub fn is_wirebench(&mut self, pid: u32) -> bool {
        pid != 0 && matches!(self.process(pid), Process::Wirebench { .. })
    }

    /// The symbol of user address `addr` in process `pid`: for a wirebench process a
    /// demangled function of the binary or `[library]`; for another process `[comm]`.
    pub fn symbol(&mut self, pid: u32, addr: u64) -> Option<String> {
        let ino = self.exe_id.map_or(0, |(_, i)| i);
        self.process(pid);
        let (maps, bias) = match self.processes.get(&pid)? {
            Process::Foreign { comm } => return Some(format!("[{comm}]")),
            Process::Wirebench { maps, bias } => (maps, bias),
        };
        let m = maps.iter().find(|m| m.start <= addr && addr < m.end)?;
        if m.inode == ino {
            if let Some(bias) = bias {
                if let Some(s) = self.exe.lookup(addr.wrapping_sub(*bias)) {
                    return Some(s.to_owned());
                }
            }
        }
        Some(format!("[{}]", m.name.as_deref().unwrap_or("anon")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines() {
        let text = "\
55d4c5a00000-55d4c5a3c000 r--p 00000000 fd:01 1234 /usr/bin/wire bench
55d4c5a3c000-55d4c5b00000 r-xp 0003b000 fd:01 1234 /usr/bin/wire bench
7f0000000000-7f0000100000 r-xp 00028000 fd:01 99 /usr/lib/libc.so.6 (deleted)
7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0 [vdso]
";
        let maps = parse_maps(text);
        assert_eq!(maps.len(), 3);
        assert_eq!(maps[0].start, 0x55d4_c5a3_c000);
        assert_eq!(maps[0].offset, 0x3b000);
        assert_eq!(maps[0].name.as_deref(), Some("wire bench"));
        assert_eq!(maps[1].name.as_deref(), Some("libc.so.6"));
        assert_eq!(maps[2].inode, 0);
    }

    #[test]
    fn bias_follows_the_segment_holding_the_offset() {
        // An lld-style layout: the text segment at vaddr 0x3a2a0, file offset 0x392a0,
        // sharing the file page 0x39000 with the read-only segment before it; the kernel
        // maps that page at the page-aligned runtime address.
        let exe = ExeSymbols {
            syms: vec![(0x3c100, 0x3c200, 0)],
            names: vec!["main".into()],
            segments: vec![(0, 0, 0x39298), (0x3a2a0, 0x392a0, 0x10000)],
        };
        let bias = exe.bias(0x55d4_c5a3_a000, 0x39000).unwrap();
        assert_eq!(0x55d4_c5a3_c150u64.wrapping_sub(bias), 0x3c150);
        assert_eq!(exe.lookup(0x3c150), Some("main"));
        assert_eq!(exe.lookup(0x3c200), None);
    }

    /// This test binary's own function resolves at its runtime address.
    #[test]
    fn own_function_resolves() {
        let mut syms = UserSymbols::load();
        if !wirebench_sys::require::capability(
            "symbols",
            syms.exe_symbols() > 0,
            "the test binary has no symbol table",
        ) {
            return;
        }
        let pid = std::process::id();
        assert!(syms.is_wirebench(pid));
        let addr = own_function_resolves as fn() as usize as u64;
        let name = syms.symbol(pid, addr).unwrap();
        assert!(name.contains("own_function_resolves"), "{name}");
        assert!(!syms.is_wirebench(1) || std::process::id() == 1);
    }
}
