#[path = "lab/mod.rs"]
mod lab;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let share: f64 = args[1].parse().unwrap();
    let load: f64 = args[2].parse().unwrap();
    let cluster = if share == 0.0 {
        lab::Cluster::at(load)
    } else {
        lab::Cluster::paused_share(share, load)
    };
    let scheme = match args[3].as_str() {
        "opt" => lab::Scheme::Optimal,
        "p95" => lab::Scheme::Recommended { budget: true },
        d => lab::Scheme::FixedBudget(std::time::Duration::from_micros(d.parse().unwrap())),
    };
    let run = lab::simulate_queue(&cluster, scheme, false);
    let arrivals = cluster.arrivals();
    for from in [0u64, 5, 10, 15, 20, 25] {
        let part: Vec<std::time::Duration> = run
            .latencies
            .iter()
            .zip(&arrivals)
            .filter(|(_, a)| a.as_secs() >= from && a.as_secs() < from + 5)
            .map(|(l, _)| *l)
            .collect();
        print!(
            "[{from}s: {:.1}] ",
            lab::percentile(&part, 0.99).as_secs_f64() * 1e3
        );
    }
    println!();
    println!(
        "{} p50 {:?} p99 {:?} extra {:.3} refused {} delay_end {:?}",
        scheme.label(),
        run.percentile(0.5),
        run.percentile(0.99),
        run.extra_ratio(),
        run.budget_denied,
        run.delay_at_end
    );
}
