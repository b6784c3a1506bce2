//! Source lines for code addresses of the recorded program, from its DWARF (in the launcher,
//! never in the traced process). Addresses are deterministic (ASLR is off), so a position-
//! independent executable is always loaded at the kernel's fixed base.

use std::path::Path;

/// Where the kernel maps a position-independent executable when ASLR is off (x86_64).
const PIE_BASE: u64 = 0x5555_5555_4000;

/// The program's debug information.
pub struct Symbolizer {
    loader: addr2line::Loader,
    /// Subtracted from a run-time address to get the file's address.
    bias: u64,
}

impl Symbolizer {
    /// Load `exe`'s debug information; None when the file cannot be read as an ELF file.
    pub fn new(exe: &Path) -> Option<Symbolizer> {
        let data = std::fs::read(exe).ok()?;
        let file = object::File::parse(&*data).ok()?;
        use object::Object;
        let bias = if file.kind() == object::ObjectKind::Dynamic {
            PIE_BASE
        } else {
            0
        };
        let loader = addr2line::Loader::new(exe).ok()?;
        Some(Symbolizer { loader, bias })
    }

    /// "function at file:line" for a code address (a return address is looked up one byte
    /// back by the caller); None when the address is not in the program's own code.
    pub fn describe(&self, addr: u64) -> Option<String> {
        let probe = addr.checked_sub(self.bias)?;
        let mut func: Option<String> = None;
        let mut place: Option<String> = None;
        if let Ok(mut frames) = self.loader.find_frames(probe) {
            // The innermost frame: the inlined function the code belongs to, and its line.
            if let Ok(Some(f)) = frames.next() {
                func = f
                    .function
                    .as_ref()
                    .and_then(|n| n.demangle().ok().map(|s| s.into_owned()));
                place = f.location.as_ref().and_then(|l| {
                    let file = l.file?;
                    Some(match l.line {
                        Some(line) => format!("{file}:{line}"),
                        None => file.to_string(),
                    })
                });
            }
        }
        let func = func.or_else(|| self.loader.find_symbol(probe).map(str::to_string));
        match (func, place) {
            (Some(f), Some(p)) => Some(format!("{f} at {p}")),
            (None, Some(p)) => Some(p),
            (Some(f), None) => Some(f),
            (None, None) => None,
        }
    }

    /// `describe` for a return address: the call or access instruction just before it.
    pub fn describe_return(&self, ret: u64) -> Option<String> {
        self.describe(ret.checked_sub(1)?)
    }
}

/// "0xADDR (function at file:line)" when the address has a source line, else "0xADDR".
pub fn annotate(sym: Option<&Symbolizer>, addr: u64, is_return: bool) -> String {
    let d = sym.and_then(|s| {
        if is_return {
            s.describe_return(addr)
        } else {
            s.describe(addr)
        }
    });
    match d {
        Some(d) => format!("{addr:#x} ({d})"),
        None => format!("{addr:#x}"),
    }
}

/// Name the source line after every "0x..." code address that follows `marker` in `text`
/// (runtime reports carry raw return addresses: "... at pc 0x5555555551f3").
pub fn annotate_text(exe: &Path, text: &str, marker: &str) -> String {
    if !text.contains(marker) {
        return text.to_string();
    }
    let Some(sym) = Symbolizer::new(exe) else {
        return text.to_string();
    };
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(marker) {
        let after = i + marker.len();
        out.push_str(&rest[..after]);
        rest = &rest[after..];
        let hex = rest
            .strip_prefix("0x")
            .map(|h| h.chars().take_while(|c| c.is_ascii_hexdigit()).count())
            .unwrap_or(0);
        if hex > 0 {
            let word = &rest[..2 + hex];
            if let Ok(a) = u64::from_str_radix(&word[2..], 16) {
                out.push_str(&annotate(Some(&sym), a, true));
                rest = &rest[2 + hex..];
                continue;
            }
        }
    }
    out.push_str(rest);
    out
}
