//! Framework-free readers of the files FNO users hold, hardened against
//! hostile input: PyTorch's `torch.save` zips ([`torch`]) and their pickles
//! ([`pickle`], never executed), within bounds on what a file may make us
//! allocate ([`budget`]).

pub mod budget;
pub mod pickle;
pub mod torch;
pub mod torch_write;
