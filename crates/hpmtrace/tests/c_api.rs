//! The C API's Rust side: `perfEvent` laid out as in
//! include/sifive_perf_types.h, and the checks of the init calls' arguments.

use hpmtrace::c_api::{check_init_args, perfEvent};
use hpmtrace::format::{CountType, Event};

#[test]
fn perf_event_layout_matches_c() {
    assert_eq!(core::mem::size_of::<perfEvent>(), 40);
    assert_eq!(core::mem::offset_of!(perfEvent, r#type), 4);
    assert_eq!(core::mem::offset_of!(perfEvent, code_or_cache), 8);
    assert_eq!(core::mem::offset_of!(perfEvent, event_data), 24);
    assert_eq!(core::mem::offset_of!(perfEvent, ctrInfo), 32);
}

#[test]
fn init_args() {
    assert_eq!(check_init_args(false, 3, 6, 1), Ok((6, CountType::Delta)));
    assert!(check_init_args(true, 1, 6, 1).is_err());
    assert!(check_init_args(false, 33, 6, 1).is_err());
    assert!(check_init_args(false, 1, 32, 1).is_err());
    assert!(check_init_args(false, 1, -1, 1).is_err());
    assert!(check_init_args(false, 1, 6, 3).is_err());
    let ev = |t, c| perfEvent {
        ctrIdx: 0,
        r#type: t,
        code_or_cache: [c, 1, 1],
        event_data: 7,
        ctrInfo: 0,
    };
    assert_eq!(ev(0, 2).event(), Some(Event::General { code: 2 }));
    assert_eq!(ev(2, 0).event(), Some(Event::Raw { event_data: 7 }));
    assert_eq!(
        ev(1, 3).event(),
        Some(Event::Cache {
            cache_id: 3,
            op_id: 1,
            result_id: 1
        })
    );
    assert_eq!(ev(3, 0).event(), None);
    assert_eq!(ev(0, -1).event(), None);
}
