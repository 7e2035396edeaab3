//! Selecting stored results on the command line: tags, dates and selectors.
//!
//! A selector is comma-separated terms that must all hold: `ID` (several ids: any of
//! them), `KEY=VALUE` (a tag), `workload:W`, `host:H` (either end), `since:DATE`,
//! `before:DATE`, `kind:run|sweep`, `last:N` (the newest N that match) and `latest` (=
//! `last:1`). DATE is `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS]` (UTC) or an age: `12h`, `7d`.

use wirebench_store::Filter;

/// Parse `KEY=VALUE` (key 1-64 characters of A-Z a-z 0-9 . _ -).
pub fn parse_tag(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("tag '{s}' is not KEY=VALUE"))?;
    let ok = !k.is_empty()
        && k.len() <= 64
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !ok {
        return Err(format!(
            "tag key '{k}' must be 1-64 characters of A-Z a-z 0-9 . _ -"
        ));
    }
    Ok((k.to_string(), v.to_string()))
}

/// Milliseconds since the epoch of a DATE (see the module doc), `now_ms` for ages.
pub fn parse_date(s: &str, now_ms: i64) -> Result<i64, String> {
    let bad = || {
        format!(
            "'{s}' is not a date (YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS] UTC, or an age like 7d, 12h)"
        )
    };
    if let Some(n) = s.strip_suffix('d').and_then(|n| n.parse::<f64>().ok()) {
        return Ok(now_ms - (n * 86_400_000.0) as i64);
    }
    if let Some(n) = s.strip_suffix('h').and_then(|n| n.parse::<f64>().ok()) {
        return Ok(now_ms - (n * 3_600_000.0) as i64);
    }
    let (date, time) = s.split_once(['T', ' ']).unwrap_or((s, "00:00:00"));
    let d: Vec<i64> = date
        .split('-')
        .map(|x| x.parse().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    let t: Vec<i64> = time
        .trim_end_matches('Z')
        .split(':')
        .map(|x| x.parse().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    let [y, m, day] = d[..] else {
        return Err(bad());
    };
    let (hh, mm, ss) = match t[..] {
        [h, m] => (h, m, 0),
        [h, m, s] => (h, m, s),
        _ => return Err(bad()),
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || hh > 23 || mm > 59 || ss > 60 {
        return Err(bad());
    }
    Ok(((days_from_civil(y, m, day) * 24 + hh) * 60 + mm) * 60_000 + ss * 1000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The filter a selector names.
pub fn parse_selector(s: &str, now_ms: i64) -> Result<Filter, String> {
    let mut f = Filter::default();
    for term in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        if let Ok(id) = term.parse::<i64>() {
            f.ids.push(id);
        } else if term == "latest" {
            f.limit = Some(1);
        } else if let Some((k, v)) = term.split_once(':') {
            match k {
                "workload" => f.workload = Some(v.to_string()),
                "host" => f.host = Some(v.to_string()),
                "kind" => f.kind = Some(v.to_string()),
                "since" => f.since_unix_ms = Some(parse_date(v, now_ms)?),
                "before" => f.before_unix_ms = Some(parse_date(v, now_ms)?),
                "last" => {
                    f.limit = Some(v.parse().map_err(|_| format!("last:{v}: not a count"))?)
                }
                _ => return Err(format!("unknown selector term '{term}' (workload:, host:, kind:, since:, before:, last:)")),
            }
        } else if term.contains('=') {
            f.tags.push(parse_tag(term)?);
        } else {
            return Err(format!(
                "'{term}' is not an id, a KEY=VALUE tag or a query term (workload:W, host:H, since:DATE, last:N, latest)"
            ));
        }
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        // 2026-11-29 is day 20 786 since the epoch (20 786 × 86 400 = 1 795 910 400 s).
        assert_eq!(parse_date("2026-11-29", 0).unwrap(), 1_795_910_400_000);
        assert_eq!(parse_date("1970-01-01T00:01", 0).unwrap(), 60_000);
        assert_eq!(parse_date("2d", 3 * 86_400_000).unwrap(), 86_400_000);
        assert!(parse_date("2026-13-01", 0).is_err());
        assert!(parse_date("yesterday", 0).is_err());
    }

    #[test]
    fn selectors() {
        let f = parse_selector("kernel=6.12,workload:stream,last:5", 0).unwrap();
        assert_eq!(f.tags, vec![("kernel".into(), "6.12".into())]);
        assert_eq!(f.workload.as_deref(), Some("stream"));
        assert_eq!(f.limit, Some(5));
        assert_eq!(parse_selector("3,4", 0).unwrap().ids, vec![3, 4]);
        assert!(parse_selector("colour:blue", 0).is_err());
        assert!(parse_selector("bare", 0).is_err());
        assert!(parse_tag("=x").is_err());
    }
}
