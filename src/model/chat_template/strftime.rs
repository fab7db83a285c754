//! `strftime_now(format)`: transformers gives templates `datetime.now().strftime(format)` (Llama 3.2,
//! Granite, gpt-oss and others print today's date with it). We format the current UTC time (no time
//! zone database here; servers run in UTC) with the C/Python directives templates use. Python's
//! `datetime.now()` is naive, so `%Z` and `%z` print nothing there and here. A directive we do not
//! know is an error naming it, never passed through silently.

const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// A UTC civil time.
struct Civil {
    year: i64,
    month: u32, // 1..=12
    day: u32,   // 1..=31
    yday: u32,  // 1..=366
    wday: u32,  // 0 = Monday
    hour: u32,
    min: u32,
    sec: u32,
}

fn civil(unix: i64) -> Civil {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400) as u32;
    // days since 1970-01-01 -> (y, m, d), the era-based method of H. Hinnant's date algorithms
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    const CUM: [u32; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let yday = CUM[month as usize - 1] + day + u32::from(leap && month > 2);
    Civil {
        year,
        month,
        day,
        yday,
        wday: (days + 3).rem_euclid(7) as u32, // 1970-01-01 was a Thursday
        hour: secs / 3600,
        min: secs / 60 % 60,
        sec: secs % 60,
    }
}

/// `format` applied to the UTC time `unix` (seconds since the epoch).
pub fn strftime(format: &str, unix: i64) -> Result<String, String> {
    let t = civil(unix);
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        // glibc's `%-d`: the number without padding (Python passes it to the C library)
        let mut d = chars.next();
        let unpadded = d == Some('-');
        if unpadded {
            d = chars.next();
        }
        let num = |v: u32, w: usize| {
            if unpadded {
                v.to_string()
            } else {
                format!("{v:0w$}")
            }
        };
        let h12 = if t.hour % 12 == 0 { 12 } else { t.hour % 12 };
        match d {
            Some('d') => out.push_str(&num(t.day, 2)),
            Some('e') => out.push_str(&format!("{:>2}", t.day)),
            Some('m') => out.push_str(&num(t.month, 2)),
            Some('Y') => out.push_str(&t.year.to_string()),
            Some('y') => out.push_str(&num(t.year.rem_euclid(100) as u32, 2)),
            Some('H') => out.push_str(&num(t.hour, 2)),
            Some('I') => out.push_str(&num(h12, 2)),
            Some('M') => out.push_str(&num(t.min, 2)),
            Some('S') => out.push_str(&num(t.sec, 2)),
            Some('j') => out.push_str(&num(t.yday, 3)),
            Some('p') => out.push_str(if t.hour < 12 { "AM" } else { "PM" }),
            Some('a') => out.push_str(&DAYS[t.wday as usize][..3]),
            Some('A') => out.push_str(DAYS[t.wday as usize]),
            Some('b') | Some('h') => out.push_str(&MONTHS[t.month as usize - 1][..3]),
            Some('B') => out.push_str(MONTHS[t.month as usize - 1]),
            Some('u') => out.push_str(&(t.wday + 1).to_string()),
            Some('w') => out.push_str(&((t.wday + 1) % 7).to_string()),
            Some('F') => out.push_str(&format!("{}-{:02}-{:02}", t.year, t.month, t.day)),
            Some('T') => out.push_str(&format!("{:02}:{:02}:{:02}", t.hour, t.min, t.sec)),
            Some('Z') | Some('z') => {}
            Some('%') => out.push('%'),
            Some(x) => return Err(format!("strftime_now: directive %{x} is not supported")),
            None => return Err("strftime_now: format ends with a lone %".into()),
        }
    }
    Ok(out)
}

/// The time `clock` pins (seconds since the epoch), else now, formatted.
pub fn strftime_now(format: &str, clock: Option<i64>) -> Result<String, String> {
    let now = match clock {
        Some(t) => t,
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| format!("strftime_now: the clock is before 1970: {e}"))?
            .as_secs() as i64,
    };
    strftime(format, now)
}

#[cfg(test)]
mod tests {
    use super::strftime;

    // Expected strings: CPython's naive datetime.utcfromtimestamp(t).strftime(fmt) for the same
    // instants (%Z and %z empty on a naive datetime).
    #[test]
    fn matches_python_for_known_instants() {
        let fmt = "%d %b %Y|%A %B %-d %j %y-%m-%d %H:%M:%S %I%p|%a %e %u %w|%F %T [%Z%z] %%";
        for (t, want) in [
            (
                0,
                "01 Jan 1970|Thursday January 1 001 70-01-01 00:00:00 12AM|Thu  1 4 4|1970-01-01 00:00:00 [] %",
            ),
            (
                1721995200,
                "26 Jul 2024|Friday July 26 208 24-07-26 12:00:00 12PM|Fri 26 5 5|2024-07-26 12:00:00 [] %",
            ),
            (
                1709251199,
                "29 Feb 2024|Thursday February 29 060 24-02-29 23:59:59 11PM|Thu 29 4 4|2024-02-29 23:59:59 [] %",
            ),
            (
                4102444800,
                "01 Jan 2100|Friday January 1 001 00-01-01 00:00:00 12AM|Fri  1 5 5|2100-01-01 00:00:00 [] %",
            ),
        ] {
            assert_eq!(strftime(fmt, t).unwrap(), want, "t={t}");
        }
        assert!(strftime("%Q", 0).unwrap_err().contains("%Q"));
    }
}
