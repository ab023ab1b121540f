//! ARM semihosting (`bkpt 0xAB`): text to the host's stdout and exit.

const SYS_WRITE0: u32 = 0x04;
const SYS_EXIT: u32 = 0x18;
const ADP_STOPPED_APPLICATION_EXIT: u32 = 0x2_0026;
const ADP_STOPPED_RUNTIME_ERROR: u32 = 0x2_0023;

/// One semihosting call: operation in r0, argument in r1, result in r0.
fn call(op: u32, arg: u32) -> u32 {
    let result;
    // SAFETY: the debugger (QEMU) services the breakpoint; it reads memory
    // at `arg` only for operations that take a pointer.
    unsafe {
        core::arch::asm!("bkpt #0xAB", inout("r0") op => result, in("r1") arg, options(nostack));
    }
    result
}

/// Writes `s` (SYS_WRITE0 on a NUL-terminated copy, 127 bytes at a time).
pub fn write_str(s: &str) {
    for chunk in s.as_bytes().chunks(127) {
        let mut buf = [0u8; 128];
        buf[..chunk.len()].copy_from_slice(chunk);
        call(SYS_WRITE0, buf.as_ptr() as u32);
    }
}

/// Stops the program; QEMU exits with status 0 on success, 1 otherwise.
pub fn exit(success: bool) -> ! {
    let reason = if success {
        ADP_STOPPED_APPLICATION_EXIT
    } else {
        ADP_STOPPED_RUNTIME_ERROR
    };
    call(SYS_EXIT, reason);
    // Without a debugger attached the call returns: sleep for good.
    loop {
        // SAFETY: WFI only waits for an interrupt.
        unsafe { core::arch::asm!("wfi") };
    }
}

/// `core::fmt` output through [`write_str`].
pub struct Console;

impl core::fmt::Write for Console {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        write_str(s);
        Ok(())
    }
}
