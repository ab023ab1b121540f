//! One authenticated connection to a peer during rendezvous.

use super::config::FrameCheck;
use super::frame::{self, ReadError, Seal, CONTROL};
use crate::error::{CollectiveError, Result};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Read timeout of every socket: how often a blocked reader checks for shutdown.
pub(crate) const POLL: Duration = Duration::from_millis(50);

/// An authenticated connection and its two frame counters.
pub(crate) struct Conn {
    pub stream: TcpStream,
    pub seal: Seal,
    pub peer: usize,
    pub send_seq: u64,
    pub recv_seq: u64,
}

impl Conn {
    /// Wraps a stream that finished the handshake with session key `key`.
    pub(crate) fn new(
        stream: TcpStream,
        key: [u8; 32],
        check: FrameCheck,
        peer: usize,
    ) -> Result<Self> {
        stream
            .set_read_timeout(Some(POLL))
            .and_then(|_| stream.set_nodelay(true))
            .map_err(|e| CollectiveError::io("configuring a peer socket", &e))?;
        Ok(Conn {
            stream,
            seal: Seal { key, check },
            peer,
            send_seq: 0,
            recv_seq: 0,
        })
    }

    /// Sends a rendezvous control message from rank `me`.
    pub(crate) fn send_ctl(&mut self, me: usize, msg: &[u8]) -> Result<()> {
        frame::write_frame(
            &mut self.stream,
            &self.seal,
            me,
            self.send_seq,
            CONTROL,
            0,
            &[msg],
            None,
        )
        .map_err(|e| CollectiveError::PeerDisconnected {
            peer: self.peer,
            detail: format!("sending rendezvous message: {e}"),
        })?;
        self.send_seq += 1;
        Ok(())
    }

    /// Receives a rendezvous control message, waiting until `deadline`.
    pub(crate) fn recv_ctl(
        &mut self,
        deadline: Instant,
        stall: Duration,
        max: u64,
    ) -> Result<Vec<u8>> {
        let peer = self.peer;
        match frame::read_frame(
            &mut self.stream,
            &self.seal,
            peer,
            self.recv_seq,
            max,
            Some(deadline),
            stall,
            None,
            Vec::with_capacity,
        ) {
            Ok(f) if f.kind == CONTROL => {
                self.recv_seq += 1;
                Ok(f.payload)
            }
            Ok(f) => Err(CollectiveError::CorruptFrame {
                peer,
                reason: format!("frame kind {} during rendezvous", f.kind),
            }),
            Err(ReadError::Failed(e)) => Err(e),
            Err(ReadError::Closed) | Err(ReadError::Stopped) => {
                Err(CollectiveError::PeerDisconnected {
                    peer,
                    detail: "connection closed during rendezvous".into(),
                })
            }
            Err(ReadError::Idle) => Err(CollectiveError::Timeout {
                peer,
                after: stall,
                what: "a rendezvous message".into(),
            }),
        }
    }
}
