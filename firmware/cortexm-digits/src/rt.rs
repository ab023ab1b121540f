//! The few lines of start-up a bare Cortex-M4 needs: the vector table, a
//! reset handler that initialises `.data` / `.bss` and enables the FPU,
//! and a fault handler that reports and stops QEMU.

use crate::semihosting;

extern "C" {
    static mut __sbss: u32;
    static mut __ebss: u32;
    static mut __sdata: u32;
    static mut __edata: u32;
    static __sidata: u32;
}

#[link_section = ".vector_table.reset"]
#[used]
static RESET: unsafe extern "C" fn() -> ! = reset;

/// NMI, HardFault, MemManage, BusFault, UsageFault, 4 reserved, SVCall,
/// DebugMonitor, reserved, PendSV, SysTick: all stop with a failure.
#[link_section = ".vector_table.exceptions"]
#[used]
static EXCEPTIONS: [unsafe extern "C" fn() -> !; 14] = [fault; 14];

unsafe extern "C" fn fault() -> ! {
    semihosting::write_str("fault\n");
    semihosting::exit(false)
}

/// # Safety
/// Entered once by the core at reset, before anything else runs.
#[no_mangle]
pub unsafe extern "C" fn reset() -> ! {
    let mut p = &raw mut __sbss;
    while p < &raw mut __ebss {
        core::ptr::write_volatile(p, 0);
        p = p.add(1);
    }
    let (mut dst, mut src) = (&raw mut __sdata, &raw const __sidata);
    while dst < &raw mut __edata {
        core::ptr::write_volatile(dst, core::ptr::read_volatile(src));
        dst = dst.add(1);
        src = src.add(1);
    }
    // CPACR: full access to CP10 / CP11 (the FPU) before any float code.
    const CPACR: *mut u32 = 0xE000_ED88 as *mut u32;
    core::ptr::write_volatile(CPACR, core::ptr::read_volatile(CPACR) | (0xF << 20));
    core::arch::asm!("dsb", "isb");
    crate::main()
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    semihosting::write_str("panic\n");
    semihosting::exit(false)
}
