//! The Linux counter source on the host: SBI events as perf events,
//! which events a thread can read without a system call, and perf groups
//! of software events read from their pages and with `read()`.

use hpmtrace::format::{hw, Event};
use hpmtrace::linux::{perf_attr_of, sw, user_read_method, PerfGroup, UserRead};

/// Software events whose perf page is stale while the thread runs
/// (their counts move in the kernel between page updates).
const STALE_PAGE_EVENTS: [u16; 4] = [
    sw::TASK_CLOCK,
    sw::CPU_CLOCK,
    sw::PAGE_FAULTS,
    sw::CPU_MIGRATIONS,
];

/// `cap_user_rdpmc` of `struct perf_event_mmap_page` (linux/perf_event.h).
const CAP_USER_RDPMC: u64 = 1 << 2;

#[test]
fn stale_page_events_have_no_user_read() {
    for code in STALE_PAGE_EVENTS {
        let e = Event::LinuxSoftware { code };
        assert_eq!(user_read_method(e, CAP_USER_RDPMC, 1), None);
    }
    let cycles = Event::General {
        code: hw::CPU_CYCLES,
    };
    assert_eq!(user_read_method(cycles, 0, 1), None);
    assert_eq!(user_read_method(cycles, CAP_USER_RDPMC, 0), None);
    assert_eq!(
        user_read_method(cycles, CAP_USER_RDPMC, 3),
        Some(UserRead::Counter)
    );
}

#[test]
fn sbi_events_map_to_perf() {
    assert_eq!(
        perf_attr_of(Event::General {
            code: hw::CPU_CYCLES
        }),
        Some((0, 0))
    );
    assert_eq!(
        perf_attr_of(Event::General {
            code: hw::BRANCH_MISSES
        }),
        Some((0, 5))
    );
    assert_eq!(
        perf_attr_of(Event::General {
            code: hw::TIMESTAMP
        }),
        None
    );
    assert_eq!(
        perf_attr_of(Event::Cache {
            cache_id: 2,
            op_id: 0,
            result_id: 1
        }),
        Some((3, 2 | 1 << 16))
    );
    assert_eq!(
        perf_attr_of(Event::Raw {
            event_data: 0x20000
        }),
        Some((4, 0x20000))
    );
}

#[test]
fn software_group_counts_task_clock() {
    let mut g = PerfGroup::open(&[
        (
            0,
            Event::LinuxSoftware {
                code: sw::TASK_CLOCK,
            },
        ),
        (
            1,
            Event::LinuxSoftware {
                code: sw::PAGE_FAULTS,
            },
        ),
    ])
    .expect("software perf events must open on the host");
    let mut a = [0u64; 2];
    g.read_members(&mut a);
    // Touch 16 MiB of fresh memory: page faults and CPU time.
    let mut v: Vec<u8> = Vec::with_capacity(1 << 24);
    for i in 0..(1 << 24) {
        v.push(i as u8);
    }
    std::hint::black_box(&v);
    let mut b = [0u64; 2];
    g.read_members(&mut b);
    assert!(b[0] > a[0], "task-clock advances: {a:?} -> {b:?}");
    assert!(b[1] > a[1], "page faults counted: {a:?} -> {b:?}");
}

#[test]
fn context_switches_read_from_the_page_equal_the_kernel_count() {
    // Groups of 1 to 9 members, each context switches but the second,
    // cgroup switches (which may stay 0 here, so it alone could not
    // tell a zeroed member).
    for size in 1..=9 {
        let members: Vec<(usize, Event)> = (0..size)
            .map(|slot| {
                let code = if slot == 1 {
                    sw::CGROUP_SWITCHES
                } else {
                    sw::CONTEXT_SWITCHES
                };
                (slot, Event::LinuxSoftware { code })
            })
            .collect();
        let mut g = PerfGroup::open(&members).expect("software perf events must open on the host");
        assert!(
            g.user_space_reads(),
            "context/cgroup switches are page readable"
        );
        let mut first = vec![0u64; size];
        g.read_members_syscall(&mut first);
        let mut prev = first.clone();
        for i in 0..40 {
            // A sleep normally switches this thread out, but not
            // always: the timer can expire before the task blocks
            // (an interrupt, or a host that paused this vCPU, in
            // between). So each read only must not go back, and the
            // 40 sleeps together must have switched out.
            std::thread::sleep(std::time::Duration::from_micros(20 + i));
            // The thread can be switched out between two reads (a
            // loaded host preempts it), so the kernel's count is
            // bracketed by a page read before and one after it, not
            // equal to either.
            let mut page = vec![u64::MAX; size];
            g.read_members(&mut page);
            let mut kernel = vec![u64::MAX; size];
            g.read_members_syscall(&mut kernel);
            let mut after = vec![u64::MAX; size];
            g.read_members(&mut after);
            assert!(
                (0..size).all(|k| page[k] <= kernel[k] && kernel[k] <= after[k]),
                "{size} members, after sleep {i}: page {page:?} <= kernel {kernel:?} <= page {after:?}"
            );
            assert!(
                page.iter().zip(&prev).all(|(now, before)| now >= before),
                "{size} members: counts never go back: {prev:?} -> {page:?}"
            );
            prev = page;
        }
        for (m, (last, start)) in prev.iter().zip(&first).enumerate() {
            assert!(
                m == 1 || last > start,
                "{size} members: 40 sleeps switch out: {first:?} -> {prev:?}"
            );
        }
    }
}

#[test]
fn stale_page_events_are_read_with_the_system_call() {
    for code in STALE_PAGE_EVENTS {
        let e = Event::LinuxSoftware { code };
        let g = PerfGroup::open(&[
            (
                0,
                Event::LinuxSoftware {
                    code: sw::CONTEXT_SWITCHES,
                },
            ),
            (1, e),
        ])
        .expect("software perf events must open on the host");
        assert!(
            !g.user_space_reads(),
            "one stale member: the whole group uses read()"
        );
    }
}
