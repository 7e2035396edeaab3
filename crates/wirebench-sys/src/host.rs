//! Host information: kernel release, sysctls, CPU model, available memory, load average and
//! `/proc/stat`.

use std::io;

/// Returns the kernel release (`uname -r`), e.g. `"6.18.0"`.
///
/// # Errors
///
/// Returns the `uname` error.
pub fn kernel_release() -> io::Result<String> {
    uname_field(|u| &u.release)
}

/// The host name (`uname -n`, the UTS namespace's node name).
///
/// # Errors
///
/// Returns the `uname` error.
pub fn hostname() -> io::Result<String> {
    uname_field(|u| &u.nodename)
}

fn uname_field(field: fn(&libc::utsname) -> &[libc::c_char; 65]) -> io::Result<String> {
    // SAFETY: `utsname` consists of `c_char` arrays; all-zero is valid.
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `uts` is a valid, writable `utsname`.
    let rc = unsafe { libc::uname(&mut uts) };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    let bytes: Vec<u8> = field(&uts)
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Maps a sysctl name to its path below `/proc/sys`.
///
/// Dotted names (`net.ipv4.tcp_rmem`) have their dots turned into slashes;
/// names containing a slash (`net/ipv4/tcp_rmem`) are used as they are (so
/// components such as `eth0.100` keep their dots).
fn sysctl_path(name: &str) -> io::Result<String> {
    let invalid = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid sysctl name {name:?}"),
        )
    };
    if name.is_empty() || name.starts_with('/') || name.contains('\0') {
        return Err(invalid());
    }
    let rel = if name.contains('/') {
        name.to_owned()
    } else {
        name.replace('.', "/")
    };
    if rel
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err(invalid());
    }
    Ok(format!("/proc/sys/{rel}"))
}

/// Reads a sysctl value from `/proc/sys`, trimmed of surrounding whitespace.
///
/// `name` may be dotted (`"net.ipv4.tcp_congestion_control"`) or a relative
/// path (`"net/ipv4/tcp_rmem"`).
///
/// # Errors
///
/// `InvalidInput` for absolute paths, `..`/`.`/empty components or NUL;
/// otherwise the file read error (e.g. `NotFound`).
pub fn read_sysctl(name: &str) -> io::Result<String> {
    let path = sysctl_path(name)?;
    let text = std::fs::read_to_string(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("reading {path}: {e}")))?;
    Ok(text.trim().to_owned())
}

/// Keys of `/proc/cpuinfo` that name the CPU, in order of preference
/// (x86 / most; MIPS; ARM boards; POWER; old ARM; RISC-V).
const CPU_MODEL_KEYS: &[&str] = &[
    "model name",
    "cpu model",
    "Hardware",
    "cpu",
    "Processor",
    "uarch",
];

/// Finds the CPU model in the text of `/proc/cpuinfo`.
fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    CPU_MODEL_KEYS.iter().find_map(|key| {
        cpuinfo.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            let v = v.trim();
            (k.trim() == *key && !v.is_empty()).then(|| v.to_owned())
        })
    })
}

/// Returns the CPU model name from `/proc/cpuinfo` (`"model name"`, falling
/// back to other architectures' keys), or `None` if it cannot be found.
pub fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    parse_cpu_model(&text)
}

/// Returns `MemAvailable` of `/proc/meminfo` in bytes (the kernel's estimate of the memory
/// a new workload can use without swapping), or `None` if it cannot be read.
pub fn mem_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_available(&text)
}

/// Finds `MemAvailable:  N kB` in the text of `/proc/meminfo`, in bytes.
fn parse_mem_available(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|line| {
        let rest = line.strip_prefix("MemAvailable:")?;
        let kb: u64 = rest.trim().strip_suffix("kB")?.trim().parse().ok()?;
        kb.checked_mul(1024)
    })
}

/// Returns the 1-minute load average of `/proc/loadavg` (runnable and uninterruptible
/// tasks, averaged), or `None` if it cannot be read.
pub fn load_average_1m() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Returns the text of `/proc/stat` (parsed elsewhere).
///
/// # Errors
///
/// Returns the file read error.
pub fn read_proc_stat() -> io::Result<String> {
    std::fs::read_to_string("/proc/stat")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo() {
        let text = "MemTotal:       24684012 kB\nMemFree:  100 kB\nMemAvailable:   2048 kB\n";
        assert_eq!(parse_mem_available(text), Some(2048 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
        assert!(mem_available_bytes().is_some_and(|b| b > 0));
        assert!(load_average_1m().is_some_and(|l| l >= 0.0));
    }

    #[test]
    fn release() {
        let r = kernel_release().unwrap();
        assert!(!r.is_empty());
        assert!(r.starts_with(|c: char| c.is_ascii_digit()), "{r}");
    }

    #[test]
    fn sysctl_reads() {
        assert!(!read_sysctl("net.ipv4.tcp_congestion_control")
            .unwrap()
            .is_empty());
        let rmem = read_sysctl("net/ipv4/tcp_rmem").unwrap();
        assert_eq!(rmem.split_whitespace().count(), 3, "{rmem}");
        assert_eq!(
            read_sysctl("net.ipv4.no_such_sysctl").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn sysctl_names() {
        assert_eq!(
            sysctl_path("net.ipv4.tcp_rmem").unwrap(),
            "/proc/sys/net/ipv4/tcp_rmem"
        );
        assert_eq!(
            sysctl_path("net/ipv4/conf/eth0.100/rp_filter").unwrap(),
            "/proc/sys/net/ipv4/conf/eth0.100/rp_filter"
        );
        for bad in [
            "",
            "/etc/passwd",
            "../../etc/passwd",
            "net/../../etc/passwd",
            "net..ipv4",
            "net.ipv4.",
            "net/./ipv4",
            "a\0b",
        ] {
            assert_eq!(
                read_sysctl(bad).unwrap_err().kind(),
                io::ErrorKind::InvalidInput,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn cpu_model_parsing() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU\n";
        assert_eq!(
            parse_cpu_model(x86).as_deref(),
            Some("Intel(R) Xeon(R) CPU")
        );
        let ppc = "processor\t: 0\ncpu\t\t: POWER9 (raw), altivec supported\n";
        assert_eq!(
            parse_cpu_model(ppc).as_deref(),
            Some("POWER9 (raw), altivec supported")
        );
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\nHardware\t: BCM2835\n";
        assert_eq!(parse_cpu_model(arm).as_deref(), Some("BCM2835"));
        assert_eq!(parse_cpu_model("processor\t: 0\n"), None);
        // Real machine: not asserted (some VMs/architectures have no model).
        let _ = cpu_model();
    }

    #[test]
    fn proc_stat() {
        assert!(read_proc_stat().unwrap().starts_with("cpu "));
    }
}
