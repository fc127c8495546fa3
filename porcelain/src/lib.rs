//! shake for people: fold policy, meter, status, log, show, rendering, and the pi integration.

pub mod pi_extension;
