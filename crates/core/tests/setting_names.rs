//! A setting's enum is parsed by its `FromStr` (configurations, benches) and,
//! behind the `clap` feature, by clap's derived `ValueEnum` (the CLI): both
//! must take every value under the same name.
#![cfg(feature = "clap")]

use std::fmt::Debug;
use std::str::FromStr;

use clap::ValueEnum;
use fno_core::{BlockPrecision, FaultTolerance, Precision, SpectralImpl};
use fno_kernels::backend::BackendChoice;
use fno_kernels::fft::{Norm, Planning};

fn same_names<T: ValueEnum + FromStr + PartialEq + Debug>() {
    for value in T::value_variants() {
        let name = value
            .to_possible_value()
            .expect("no value is hidden")
            .get_name()
            .to_string();
        let parsed = <T as FromStr>::from_str(&name).unwrap_or_else(|_| panic!("{name} does not parse back"));
        assert_eq!(&parsed, value, "{name}");
    }
}

#[test]
fn clap_and_from_str_name_every_value_alike() {
    same_names::<BlockPrecision>();
    same_names::<SpectralImpl>();
    same_names::<FaultTolerance>();
    same_names::<Precision>();
    same_names::<BackendChoice>();
    same_names::<Norm>();
    same_names::<Planning>();
}
