//! The priced meter (issue 31.2) on real sessions, checked against hand computations: pi's
//! recorded cost gives the prices, a real Claude Code transcript's usage gives the 1-hour cache
//! and the built-in table the prices; the cold-cache rule against the turn times in the files.

use serde_json::Value;

use crate::env::TestEnv;

const PI: &str = "pi-mono-before-compaction.v3-migrated-by-pi-1.6.0.jsonl";
/// Real oh-my-pi (claude-sonnet-4-5), its usage recorded per turn as pi records it.
const OMP: &str = "omp/omp-large-session.jsonl";
/// Real Claude Code (claude-opus-5) with the 1-hour cache in its usage.
const CLAUDE: &str = "claude-real/attach-d3f32579.jsonl";

/// `shake meter --json` with "now" fixed at `now`.
fn meter_at(env: &TestEnv, path: &str, now: &str, extra: &[&str]) -> Value {
    let out =
        env.cmd().env("SHAKE_TIMESTAMP", now).args([&["meter", path, "--json"], extra].concat()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn close(got: &Value, want: f64) {
    let got = got.as_f64().unwrap_or_else(|| panic!("not a number: {got}"));
    assert!((got - want).abs() <= 1e-9 * want.abs().max(1.0), "{got} != {want}");
}

/// The arithmetic of `docs/folding.md`, by hand: cost, saving, break-even.
fn check_arithmetic(cache: &Value, freed: u64, suffix: u64, read: f64, write: f64) {
    let cost = ((suffix - freed) as f64 * write - suffix as f64 * read) / 1e6;
    let saving = freed as f64 * read / 1e6;
    close(&cache["cost"], cost);
    close(&cache["savingPerTurn"], saving);
    let turns = (cost / saving).ceil() as u64;
    assert_eq!(cache["breakEvenTurns"], turns);
    let verdict = match turns {
        1 => "pays back in 1 turn".to_string(),
        n if n <= 25 => format!("pays back in {n} turns"),
        _ => "not worth it yet".to_string(),
    };
    assert_eq!(cache["verdict"], verdict.as_str());
}

#[test]
fn pi_prices_come_from_the_recorded_cost_and_the_cache_cools_after_five_minutes() {
    let env = TestEnv::new();
    let path = env.fixture(PI);
    let p = path.to_str().unwrap();
    // The last assistant turn is ba15ce63, at 2025-12-09T00:42:47.588Z (claude-opus-4-5).
    let warm = meter_at(&env, p, "2025-12-09T00:45:00.000Z", &["--tokenizer", "pi"]);
    let cache = &warm["cache"];
    assert_eq!((cache["lastTurn"].as_str(), cache["cold"].as_bool()), (Some("2025-12-09T00:42:47.588Z"), Some(false)));
    assert_eq!((cache["priceSource"].as_str(), cache["cacheLifetimeSeconds"].as_u64()), (Some("session"), Some(300)));
    // The prices, by hand from the file: 5811b069 read 166,990 cached tokens for $0.083495
    // ($0.50 a million); ba15ce63 wrote 167,978 for $1.0498625 ($6.25 a million).
    let (read, write) = (0.083495 / 166_990.0 * 1e6, 1.0498625 / 167_978.0 * 1e6);
    close(&cache["readPrice"], read);
    close(&cache["writePrice"], write);
    // The suffix, by hand: `show`'s tokens from the first folded entry to the end.
    let regions: Value = serde_json::from_str(&env.ok(&["regions", p, "--json", "--tokenizer", "pi"])).unwrap();
    let first = regions["regions"][0]["id"].as_str().unwrap();
    let shown: Value = serde_json::from_str(&env.ok(&["show", p, "--json", "--tokenizer", "pi"])).unwrap();
    let entries = shown["entries"].as_array().unwrap();
    let at = entries.iter().position(|e| e["id"] == first).unwrap();
    let suffix: u64 = entries[at..].iter().map(|e| e["tokens"].as_u64().unwrap()).sum();
    assert_eq!(cache["suffixTokens"], suffix);
    check_arithmetic(cache, warm["tokens"].as_u64().unwrap(), suffix, read, write);
    // Five minutes after the last turn the cache may still be warm; a millisecond later it is not.
    let edge = meter_at(&env, p, "2025-12-09T00:47:47.588Z", &["--tokenizer", "pi"]);
    assert_eq!(edge["cache"]["cold"], false);
    let cold = meter_at(&env, p, "2025-12-09T00:47:47.589Z", &["--tokenizer", "pi"]);
    assert_eq!(
        (cold["cache"]["cold"].as_bool(), cold["cache"]["verdict"].as_str()),
        (Some(true), Some("cache cold: free now"))
    );
    close(&cold["cache"]["cost"], -(cold["tokens"].as_u64().unwrap() as f64) * write / 1e6);
    let line =
        env.cmd().env("SHAKE_TIMESTAMP", "2025-12-09T00:47:47.589Z").args(["meter", p, "--tokenizer", "pi"]).output();
    let tokens = cold["tokens"].as_u64().unwrap();
    let want = format!("~{}k shakeable · cache cold: free now\n", (tokens + 500) / 1000);
    assert_eq!(String::from_utf8(line.unwrap().stdout).unwrap(), want);
}

#[test]
fn claude_code_usage_shows_the_hour_long_cache_and_the_table_prices_it() {
    let env = TestEnv::new();
    let path = env.write("t.jsonl", std::fs::read(crate::env::fixture_path(CLAUDE)).unwrap());
    let p = path.to_str().unwrap();
    // The last reply: 2026-08-08T00:36:32.732Z, claude-opus-5, its cache written with
    // `ephemeral_1h_input_tokens`: the cache lives an hour, and the 1-hour write price applies.
    let warm = meter_at(&env, p, "2026-08-08T01:06:32.732Z", &["--tokenizer", "pi"]);
    let cache = &warm["cache"];
    assert_eq!((cache["cold"].as_bool(), cache["cacheLifetimeSeconds"].as_u64()), (Some(false), Some(3600)));
    assert_eq!(cache["priceSource"], "table");
    assert!(cache["prices"].as_str().unwrap().starts_with("built-in prices for claude-opus ("), "{cache}");
    // claude-opus: $5 a million of input, so $10 to write the 1-hour cache and $0.50 to read it.
    let (read, write) = (0.5, 10.0);
    close(&cache["readPrice"], read);
    close(&cache["writePrice"], write);
    check_arithmetic(cache, warm["tokens"].as_u64().unwrap(), cache["suffixTokens"].as_u64().unwrap(), read, write);
    // An hour and a millisecond after: cold.
    let cold = meter_at(&env, p, "2026-08-08T01:36:32.733Z", &["--tokenizer", "pi"]);
    assert_eq!(cold["cache"]["verdict"], "cache cold: free now");
    // The config file's prices win over the table, and the reading says so.
    std::fs::write(
        env.cwd().join(".shake.toml"),
        "[prices.claude-opus-5]\ninput = 4\ncache-write = 5\ncache-read = 0.4\ncache-write-1h = 8\n",
    )
    .unwrap();
    let priced = meter_at(&env, p, "2026-08-08T01:06:32.732Z", &["--tokenizer", "pi"]);
    let cache = &priced["cache"];
    assert_eq!(cache["priceSource"], "config");
    assert!(cache["prices"].as_str().unwrap().ends_with(".shake.toml [prices.claude-opus-5]"), "{cache}");
    check_arithmetic(cache, priced["tokens"].as_u64().unwrap(), cache["suffixTokens"].as_u64().unwrap(), 0.4, 8.0);
}

#[test]
fn omp_meter_keeps_omps_figure_and_prices_it_from_the_recorded_cost() {
    let env = TestEnv::new();
    let path = env.write("omp.jsonl", std::fs::read(crate::env::fixture_path(OMP)).unwrap());
    let p = path.to_str().unwrap();
    // The last assistant turn is 7e66f52c at 2025-11-21T02:14:02.980Z (claude-sonnet-4-5); the
    // `session_exit` entry after it reached no provider.
    let warm = meter_at(&env, p, "2025-11-21T02:16:00.000Z", &[]);
    assert_eq!((warm["host"].as_str(), warm["profile"].as_str()), (Some("omp"), Some("omp")));
    let cache = &warm["cache"];
    assert_eq!((cache["lastTurn"].as_str(), cache["cold"].as_bool()), (Some("2025-11-21T02:14:02.980Z"), Some(false)));
    assert_eq!((cache["priceSource"].as_str(), cache["cacheLifetimeSeconds"].as_u64()), (Some("session"), Some(300)));
    // The prices, by hand from 7e66f52c's usage: 176,585 cached tokens read for $0.0529755
    // ($0.30 a million), 1,019 written for $0.00382125 ($3.75 a million).
    let (read, write) = (0.0529755 / 176_585.0 * 1e6, 0.00382125 / 1_019.0 * 1e6);
    close(&cache["readPrice"], read);
    close(&cache["writePrice"], write);
    // The suffix holds every region /shake would replace (each counted as OMP counts it).
    let file = shake_plumbing::omp::OmpFile::read(&path).unwrap();
    let tok = shake_plumbing::omp::session_tokenizer(
        &file,
        false,
        shake_plumbing::tokens::Tokenizer::new(shake_plumbing::tokens::TokenizerName::Pi),
    );
    let r = shake_plumbing::omp::reading(&file, &shake_plumbing::omp::shake::AGGRESSIVE, tok.0, tok.1);
    let freed = warm["tokens"].as_u64().unwrap();
    assert_eq!(freed, r.freed, "the figure is OMP's own");
    let suffix = cache["suffixTokens"].as_u64().unwrap();
    assert!(suffix >= r.regions.iter().map(|g| g.tokens).sum::<u64>(), "{suffix}");
    check_arithmetic(cache, freed, suffix, read, write);
    // Five minutes after the last turn the cache may still be warm; a millisecond later it is not.
    assert_eq!(meter_at(&env, p, "2025-11-21T02:19:02.980Z", &[])["cache"]["cold"], false);
    let cold = meter_at(&env, p, "2025-11-21T02:19:02.981Z", &[]);
    assert_eq!(cold["tokens"], warm["tokens"]);
    assert_eq!(cold["cache"]["verdict"], "cache cold: free now");
    close(&cold["cache"]["cost"], -(freed as f64) * write / 1e6);
    let line = env.cmd().env("SHAKE_TIMESTAMP", "2025-11-21T02:19:02.981Z").args(["meter", p]).output().unwrap();
    let want = format!("~{}k shakeable · cache cold: free now\n", (freed + 500) / 1000);
    assert_eq!(String::from_utf8(line.stdout).unwrap(), want);
}

#[test]
fn the_payback_horizon_is_a_config_setting_the_reading_names() {
    let env = TestEnv::new();
    let path = env.fixture(PI);
    let p = path.to_str().unwrap();
    let at = |now| meter_at(&env, p, now, &["--tokenizer", "pi"]);
    // Two minutes after the last turn this session's fold pays back in 13 turns (the worked
    // example of docs/folding.md): within the default horizon of 25 turns.
    let warm = at("2025-12-09T00:45:00.000Z");
    assert_eq!(
        (warm["cache"]["breakEvenTurns"].as_u64(), warm["cache"]["paybackTurns"].as_u64()),
        (Some(13), Some(25))
    );
    assert_eq!(warm["cache"]["verdict"], "pays back in 13 turns");
    // A user who expects fewer turns before the cache goes cold sets a shorter horizon.
    std::fs::write(env.cwd().join(".shake.toml"), "[fold]\npayback-turns = 10\n").unwrap();
    let short = at("2025-12-09T00:45:00.000Z");
    assert_eq!(
        (short["cache"]["breakEvenTurns"].as_u64(), short["cache"]["paybackTurns"].as_u64()),
        (Some(13), Some(10))
    );
    assert_eq!(short["cache"]["verdict"], "not worth it yet");
    let folded = env
        .cmd()
        .env("SHAKE_TIMESTAMP", "2025-12-09T00:45:00.000Z")
        .args(["fold", p, "--dry-run", "--force", "--tokenizer", "pi"])
        .output()
        .unwrap();
    let said = String::from_utf8(folded.stdout).unwrap();
    assert!(said.contains("it pays back in 13 turns, not worth it yet (beyond 10)"), "{said}");
    // A cold cache is free whatever the horizon.
    let cold = at("2025-12-09T00:47:47.589Z");
    assert_eq!(cold["cache"]["verdict"], "cache cold: free now");
}
