//! The boundary mirror, written once.
//!
//! Each plain trait ([`Sorter`](crate::Sorter), [`Allocator`](crate::Allocator)) has three
//! mirrors at the boundary: the `#[sabi_trait]` interface that crosses it, the module-side impl
//! of that interface for the `Guarded` wrapper (every call inside `catch_unwind`), and the
//! host-side impl of the plain trait for the loaded trait object. `boundary_mirror!`
//! writes all three from one list of methods, each given with its plain and its boundary
//! types; the conversions between the two live here, once:
//!
//! * [`AbiArg`]: a boundary argument seen as the plain trait takes it (`u64` → `usize` for a
//!   length, `RStr` → `&str`,
//!   `RSlice<T>` → `&[T]`, `ROption<T>` → `Option<…>`, everything else as it is);
//! * [`PlainArg`]: the reverse, on the host side;
//! * [`Returned`]: a plain return value as it crosses (`Result<T>` as is; the infallible
//!   queries `bool`, `usize` and `Option<f64>` inside `RResult`, with the answer a failing
//!   module gives).
//!
//! The contracts are documented once, on the plain traits; the boundary interface links to them.

use abi_stable::std_types::{ROption, RResult, RSlice, RStr};

use crate::allocator::{InverseOfferStatus, Unavailability};
use crate::error::{ModuleError, Result};
use crate::ids::{AgentId, ClientId, FrameworkId};

/// A boundary argument, seen as the plain trait takes it.
pub trait AbiArg {
    /// The plain trait's type for this argument.
    type Plain<'a>
    where
        Self: 'a;
    /// Borrows (or copies) the argument as the plain type.
    fn plain(&mut self) -> Self::Plain<'_>;
}

/// A plain argument, converted for the boundary type `A`.
pub trait PlainArg<A> {
    /// The argument as the boundary carries it.
    fn abi(self) -> A;
}

/// A plain trait's return value as it crosses the boundary.
pub trait Returned: Sized {
    /// The value inside the boundary's `RResult`.
    type Abi;
    /// Module side: the plain value for the boundary (`guard` adds the `RResult`).
    fn to_abi(self) -> Result<Self::Abi>;
    /// Host side: the plain value from what the boundary returned.
    fn from_abi(returned: RResult<Self::Abi, ModuleError>) -> Self;
}

macro_rules! same_on_both_sides {
    ($($t:ty),*) => {$(
        impl AbiArg for $t {
            type Plain<'a> = $t;
            fn plain(&mut self) -> $t {
                *self
            }
        }
    )*};
}
same_on_both_sides!(ClientId, AgentId, FrameworkId, f64, u32, bool, InverseOfferStatus);

impl<T: ?Sized> AbiArg for &T {
    type Plain<'a>
        = &'a T
    where
        Self: 'a;
    fn plain(&mut self) -> &T {
        self
    }
}

impl<T: ?Sized> AbiArg for &mut T {
    type Plain<'a>
        = &'a mut T
    where
        Self: 'a;
    fn plain(&mut self) -> &mut T {
        self
    }
}

/// A length crosses as `u64` (one width on every platform); a value past `usize::MAX` (only
/// possible on a narrower platform) is taken as `usize::MAX`.
impl AbiArg for u64 {
    type Plain<'a> = usize;
    fn plain(&mut self) -> usize {
        usize::try_from(*self).unwrap_or(usize::MAX)
    }
}

impl AbiArg for RStr<'_> {
    type Plain<'a>
        = &'a str
    where
        Self: 'a;
    fn plain(&mut self) -> &str {
        self.as_str()
    }
}

impl<T> AbiArg for RSlice<'_, T> {
    type Plain<'a>
        = &'a [T]
    where
        Self: 'a;
    fn plain(&mut self) -> &[T] {
        self.as_slice()
    }
}

/// Crosses by value, taken by reference (`Option<&Unavailability>`).
impl AbiArg for Unavailability {
    type Plain<'a> = &'a Unavailability;
    fn plain(&mut self) -> &Unavailability {
        self
    }
}

impl<T: AbiArg> AbiArg for ROption<T> {
    type Plain<'a>
        = Option<T::Plain<'a>>
    where
        Self: 'a;
    fn plain(&mut self) -> Option<T::Plain<'_>> {
        self.as_mut().into_option().map(AbiArg::plain)
    }
}

impl<T> PlainArg<T> for T {
    fn abi(self) -> T {
        self
    }
}

impl PlainArg<u64> for usize {
    fn abi(self) -> u64 {
        self as u64
    }
}

impl<'a> PlainArg<RStr<'a>> for &'a str {
    fn abi(self) -> RStr<'a> {
        self.into()
    }
}

impl<'a, T> PlainArg<RSlice<'a, T>> for &'a [T] {
    fn abi(self) -> RSlice<'a, T> {
        self.into()
    }
}

impl PlainArg<Unavailability> for &Unavailability {
    fn abi(self) -> Unavailability {
        *self
    }
}

impl<A, P: PlainArg<A>> PlainArg<ROption<A>> for Option<P> {
    fn abi(self) -> ROption<A> {
        self.map(PlainArg::abi).into()
    }
}

impl<T> Returned for Result<T> {
    type Abi = T;
    fn to_abi(self) -> Result<T> {
        self
    }
    fn from_abi(returned: RResult<T, ModuleError>) -> Self {
        returned.into()
    }
}

/// A failing module answers `false`.
impl Returned for bool {
    type Abi = bool;
    fn to_abi(self) -> Result<bool> {
        Ok(self)
    }
    fn from_abi(returned: RResult<bool, ModuleError>) -> Self {
        returned.unwrap_or(false)
    }
}

/// A failing module answers 0.
impl Returned for usize {
    type Abi = u64;
    fn to_abi(self) -> Result<u64> {
        Ok(self as u64)
    }
    fn from_abi(returned: RResult<u64, ModuleError>) -> Self {
        returned.unwrap_or(0) as usize
    }
}

/// A failing module answers `None`.
impl Returned for Option<f64> {
    type Abi = ROption<f64>;
    fn to_abi(self) -> Result<ROption<f64>> {
        Ok(self.into())
    }
    fn from_abi(returned: RResult<ROption<f64>, ModuleError>) -> Self {
        returned.into_result().ok().and_then(ROption::into_option)
    }
}

/// Writes, from one list of methods, the `#[sabi_trait]` boundary interface, its impl for
/// `Guarded<T: PlainTrait>` and the plain trait's impl for the boxed trait object. Each method
/// is `fn name(&[mut] self, arg: PlainType => AbiType, …) -> PlainReturn => AbiReturn;` in the
/// interface's (frozen) order, with its doc attributes; the last one goes in its own
/// `last { … }` block and gets `#[sabi(last_prefix_field)]`.
///
/// A later ABI's interface extends an earlier one's list (`trait V2 mirrors Plain for T, boxed
/// as B2, extends { … } last { … } adds { … } last { … }`): every method of the earlier list,
/// in the same order, then the added ones (its last prefix field is the last added method).
/// Several `adds { … } last { … }` groups follow one another, one per ABI version since the
/// list's first (ABI 3's sorter interface extends ABI 1's list with ABI 2's and its own).
/// The earlier interface stays exactly as it was, so that a library built before the later one
/// existed still loads; the later one's plain-trait impl forwards the added methods, where the
/// earlier one keeps the plain trait's defaults for them. An ABI file keeps its list in a macro
/// that hands it to `boundary_mirror!` (ABI 1's `abi1_sorter_methods!`), so that the later
/// ABI's file reuses it without repeating it.
///
/// The expansion names `sabi_trait`, `Guarded` and `guard` (and the argument and return types)
/// as they are in scope where it is invoked: the module writing an interface imports them.
macro_rules! boundary_mirror {
    (
        $(#[$trait_attr:meta])*
        trait $abi:ident mirrors $plain:ident for $bound:ident, boxed as $boxed:ty
        { $($methods:tt)* } last { $($last:tt)* }
    ) => {
        $crate::mirror::boundary_mirror! { @one [$(#[$trait_attr])*] $abi, $plain, $bound, $boxed;
            [$($methods)*] [$($last)*] }
    };
    (
        $(#[$trait_attr:meta])*
        trait $abi:ident mirrors $plain:ident for $bound:ident, boxed as $boxed:ty,
        extends { $($methods:tt)* } last { $($last:tt)* }
        $(adds { $($added:tt)* } last { $($added_last:tt)* })+
    ) => {
        $crate::mirror::boundary_mirror! { @fold [$(#[$trait_attr])*] $abi, $plain, $bound, $boxed;
            [$($methods)*] [$($last)*] $([$($added)*] [$($added_last)*])+ }
    };
    // Each `adds` group folds the previous last method into the list.
    (
        @fold [$($trait_attr:tt)*] $abi:ident, $plain:ident, $bound:ident, $boxed:ty;
        [$($methods:tt)*] [$($last:tt)*] [$($added:tt)*] [$($added_last:tt)*] $($rest:tt)*
    ) => {
        $crate::mirror::boundary_mirror! { @fold [$($trait_attr)*] $abi, $plain, $bound, $boxed;
            [$($methods)* $($last)* $($added)*] [$($added_last)*] $($rest)* }
    };
    (
        @fold [$($trait_attr:tt)*] $abi:ident, $plain:ident, $bound:ident, $boxed:ty;
        [$($methods:tt)*] [$($last:tt)*]
    ) => {
        $crate::mirror::boundary_mirror! { @one [$($trait_attr)*] $abi, $plain, $bound, $boxed;
            [$($methods)*] [$($last)*] }
    };
    (
        @one [$($trait_attr:tt)*] $abi:ident, $plain:ident, $bound:ident, $boxed:ty;
        [$(
            $(#[$attr:meta])*
            fn $name:ident(& $(mut $($mutable:lifetime)?)? self $(, $arg:ident : $pty:ty => $aty:ty)* $(,)?)
                -> $pret:ty => $aret:ty;
        )*]
        [
            $(#[$lattr:meta])*
            fn $lname:ident(& $(mut $($lmutable:lifetime)?)? self $(, $larg:ident : $lpty:ty => $laty:ty)* $(,)?)
                -> $lpret:ty => $laret:ty;
        ]
    ) => {
        $($trait_attr)*
        #[sabi_trait]
        pub trait $abi: Send {
            $(
                $(#[$attr])*
                fn $name(& $(mut $($mutable)?)? self $(, $arg: $aty)*) -> $aret;
            )*
            $(#[$lattr])*
            #[sabi(last_prefix_field)]
            fn $lname(& $(mut $($lmutable)?)? self $(, $larg: $laty)*) -> $laret;
        }

        $crate::mirror::boundary_mirror! { @impls $abi, $plain, $bound, $boxed;
            $(fn $name(& $(mut $($mutable)?)? self $(, $arg: $pty => $aty)*) -> $pret => $aret;)*
            fn $lname(& $(mut $($lmutable)?)? self $(, $larg: $lpty => $laty)*) -> $lpret => $laret;
        }
    };
    (
        @impls $abi:ident, $plain:ident, $bound:ident, $boxed:ty;
        $(
            fn $name:ident(& $(mut $($mutable:lifetime)?)? self $(, $arg:ident : $pty:ty => $aty:ty)*)
                -> $pret:ty => $aret:ty;
        )*
    ) => {
        impl<$bound: $plain> $abi for Guarded<$bound> {
            $(
                #[allow(unused_mut)]
                fn $name(& $(mut $($mutable)?)? self $(, mut $arg: $aty)*) -> $aret {
                    guard(&self.poisoned, stringify!($name), || {
                        $crate::mirror::Returned::to_abi(
                            self.inner.$name($($crate::mirror::AbiArg::plain(&mut $arg)),*),
                        )
                    })
                }
            )*
        }

        impl $plain for $boxed {
            $(
                fn $name(& $(mut $($mutable)?)? self $(, $arg: $pty)*) -> $pret {
                    <$pret as $crate::mirror::Returned>::from_abi($abi::$name(
                        self
                        $(, $crate::mirror::PlainArg::abi($arg))*
                    ))
                }
            )*
        }
    };
}
pub(crate) use boundary_mirror;
