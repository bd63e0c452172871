//! The calls of [`Allocator`] and [`Sorter`] over the channel, written once: from the one list
//! of methods ([`crate::methods`], each with its number on the wire), `isolated!` writes the host's proxy (the plain
//! trait implemented by sending the call) and the worker's dispatch (a request decoded, the
//! module called, the reply encoded).
//!
//! Modes: `call` waits for the reply; `post` (the sorter calls that answer only success or
//! failure: the built-in allocator treats any failure of those as a fault, whichever call
//! reports it) is queued and answered with the next call when the proxy was made for the
//! built-in allocator, and waits otherwise; `out` writes its answer into the caller's buffer.

use allocator_api::allocator::{
    InverseOfferStatus, InverseOfferStatusEntry, Operation, RoleQuota, RoleWeight, Unavailability,
};
use allocator_api::{
    AgentAllocation, AgentId, AgentInfo, Allocation, Allocator, ClientId, ExplainEntry,
    ExplainSubject, FrameworkId, FrameworkInfo, FrameworkOptions, ModuleError, OfferBatch,
    Quantities, Quota, RString, RVec, Request, Resources, Result, Sorter,
};

use super::link::Link;
use super::wire::{DResult, Dec, DecodeError, Enc, Wire, get_into, put_slice};

/// A plain trait's argument type: how the host sends it and how the worker lends the decoded
/// value to the module as that type.
pub(crate) trait Arg<'a> {
    /// What the worker decodes.
    type Owned: Wire;
    /// The argument as the plain trait takes it.
    fn lend(owned: &'a Self::Owned) -> Self;
    /// Appends the argument.
    fn send(&self, e: &mut Enc);
}

impl<'a, T: Wire> Arg<'a> for &'a T {
    type Owned = T;
    fn lend(owned: &'a T) -> &'a T {
        owned
    }
    fn send(&self, e: &mut Enc) {
        (**self).put(e);
    }
}

impl<'a, T: Wire> Arg<'a> for &'a [T] {
    type Owned = Vec<T>;
    fn lend(owned: &'a Vec<T>) -> &'a [T] {
        owned
    }
    fn send(&self, e: &mut Enc) {
        put_slice(self, e);
    }
}

impl<'a> Arg<'a> for &'a str {
    type Owned = String;
    fn lend(owned: &'a String) -> &'a str {
        owned
    }
    fn send(&self, e: &mut Enc) {
        e.str(self);
    }
}

impl<'a, T: Wire> Arg<'a> for Option<&'a T> {
    type Owned = Option<T>;
    fn lend(owned: &'a Option<T>) -> Option<&'a T> {
        owned.as_ref()
    }
    fn send(&self, e: &mut Enc) {
        match self {
            None => e.u8(0),
            Some(v) => {
                e.u8(1);
                v.put(e);
            }
        }
    }
}

impl<'a, T: Wire> Arg<'a> for Option<&'a [T]> {
    type Owned = Option<Vec<T>>;
    fn lend(owned: &'a Option<Vec<T>>) -> Option<&'a [T]> {
        owned.as_deref()
    }
    fn send(&self, e: &mut Enc) {
        match self {
            None => e.u8(0),
            Some(v) => {
                e.u8(1);
                put_slice(v, e);
            }
        }
    }
}

macro_rules! copied_args {
    ($($t:ty),*) => {$(
        impl<'a> Arg<'a> for $t {
            type Owned = $t;
            fn lend(owned: &'a $t) -> $t {
                *owned
            }
            fn send(&self, e: &mut Enc) {
                self.put(e);
            }
        }
    )*};
}
copied_args!(
    f64,
    u32,
    usize,
    bool,
    AgentId,
    ClientId,
    FrameworkId,
    Option<f64>,
    Option<InverseOfferStatus>,
    Option<ClientId>
);

/// A plain trait's return value on the wire.
pub(crate) trait Reply: Sized {
    /// Worker: appends the value.
    fn put_reply(self, e: &mut Enc);
    /// Host: reads the value.
    fn get_reply(d: &mut Dec<'_>) -> DResult<Self>;
    /// Host: the value to return, given what the call gave (a dead worker, a failed posted
    /// call reported now). Infallible queries answer what a failing module answers across
    /// the boundary (`false`, 0, `None`).
    fn settle(r: Result<Self, ModuleError>, link: &Link) -> Self;
}

/// What a fallible call answers besides success: nothing (`Result<()>`, encoded as no bytes)
/// or a flag (`sort_prefix`'s `Result<bool>`).
pub(crate) trait Answered: Sized {
    /// Appends the value.
    fn put_value(&self, e: &mut Enc);
    /// Reads the value.
    fn get_value(d: &mut Dec<'_>) -> DResult<Self>;
}

impl Answered for () {
    fn put_value(&self, _: &mut Enc) {}
    fn get_value(_: &mut Dec<'_>) -> DResult<()> {
        Ok(())
    }
}

impl Answered for bool {
    fn put_value(&self, e: &mut Enc) {
        self.put(e);
    }
    fn get_value(d: &mut Dec<'_>) -> DResult<bool> {
        bool::get(d)
    }
}

/// Tag 0 and the value, or tag 1 and the error.
impl<V: Answered> Reply for Result<V> {
    fn put_reply(self, e: &mut Enc) {
        match self {
            Ok(v) => {
                e.u8(0);
                v.put_value(e);
            }
            Err(err) => {
                e.u8(1);
                err.put(e);
            }
        }
    }
    fn get_reply(d: &mut Dec<'_>) -> DResult<Self> {
        match d.u8()? {
            0 => V::get_value(d).map(Ok),
            1 => Ok(Err(ModuleError::get(d)?)),
            _ => Err(DecodeError("a bad reply tag")),
        }
    }
    fn settle(r: Result<Self, ModuleError>, link: &Link) -> Self {
        match r {
            Err(e) => Err(e),
            Ok(answer) => match link.take_deferred() {
                Some(e) => Err(e),
                None => answer,
            },
        }
    }
}

macro_rules! plain_replies {
    ($($t:ty),*) => {$(
        impl Reply for $t {
            fn put_reply(self, e: &mut Enc) {
                self.put(e);
            }
            fn get_reply(d: &mut Dec<'_>) -> DResult<Self> {
                <$t>::get(d)
            }
            fn settle(r: Result<Self, ModuleError>, _: &Link) -> Self {
                r.unwrap_or_default()
            }
        }
    )*};
}
plain_replies!(bool, usize, Option<f64>);

/// A caller-owned output buffer: read in place, reusing its memory where it can.
pub(crate) trait OutParam: Wire + Default {
    /// Reads the answer into `self`.
    fn read_into(&mut self, d: &mut Dec<'_>) -> DResult<()> {
        *self = Self::get(d)?;
        Ok(())
    }
    /// Empties the buffer (a failed call leaves it empty).
    fn empty(&mut self) {
        *self = Self::default();
    }
}

impl<T: Wire> OutParam for RVec<T> {
    fn read_into(&mut self, d: &mut Dec<'_>) -> DResult<()> {
        get_into(d, self)
    }
    fn empty(&mut self) {
        self.clear();
    }
}

impl OutParam for OfferBatch {
    fn read_into(&mut self, d: &mut Dec<'_>) -> DResult<()> {
        get_into(d, &mut self.offers)?;
        get_into(d, &mut self.inverse_offers)
    }
    fn empty(&mut self) {
        self.clear();
    }
}

impl OutParam for Resources {}
impl OutParam for Quantities {}

/// Host: reads an `out` call's reply into the caller's buffer.
fn out_reply<T: OutParam, V: Answered>(d: &mut Dec<'_>, out: &mut T) -> DResult<Result<V>> {
    match d.u8()? {
        0 => {
            let v = V::get_value(d)?;
            out.read_into(d)?;
            Ok(Ok(v))
        }
        1 => {
            out.empty();
            Ok(Err(ModuleError::get(d)?))
        }
        _ => Err(DecodeError("a bad reply tag")),
    }
}

/// Worker: writes an `out` call's reply.
fn put_out<T: Wire, V: Answered>(r: Result<V>, out: &T, e: &mut Enc) {
    match r {
        Ok(v) => {
            e.u8(0);
            v.put_value(e);
            out.put(e);
        }
        Err(err) => {
            e.u8(1);
            err.put(e);
        }
    }
}

/// The host's proxy methods, one per listed call.
macro_rules! proxy_methods {
    () => {};
    ($id:literal out fn $name:ident(& $(mut $($m:lifetime)?)? self $(, $arg:ident : $ty:ty)* ; $out:ident : $oty:ty) -> $ret:ty; $($rest:tt)*) => {
        fn $name(& $(mut $($m)?)? self $(, $arg: $ty)*, $out: &mut $oty) -> $ret {
            let reply = self.link.call(
                self.instance,
                $id,
                stringify!($name),
                |_e| { $(Arg::send(&$arg, _e);)* },
                |d| out_reply(d, $out),
            );
            <$ret as Reply>::settle(reply, &self.link)
        }
        proxy_methods!($($rest)*);
    };
    ($id:literal call fn $name:ident(& $(mut $($m:lifetime)?)? self $(, $arg:ident : $ty:ty)*) -> $ret:ty; $($rest:tt)*) => {
        fn $name(& $(mut $($m)?)? self $(, $arg: $ty)*) -> $ret {
            let reply = self.link.call(
                self.instance,
                $id,
                stringify!($name),
                |_e| { $(Arg::send(&$arg, _e);)* },
                <$ret as Reply>::get_reply,
            );
            <$ret as Reply>::settle(reply, &self.link)
        }
        proxy_methods!($($rest)*);
    };
    ($id:literal post fn $name:ident(&mut self $(, $arg:ident : $ty:ty)*) -> $ret:ty; $($rest:tt)*) => {
        fn $name(&mut self $(, $arg: $ty)*) -> $ret {
            if self.posting {
                return self.link.post(self.instance, $id, stringify!($name), |e| {
                    $(Arg::send(&$arg, e);)*
                });
            }
            let reply = self.link.call(
                self.instance,
                $id,
                stringify!($name),
                |e| { $(Arg::send(&$arg, e);)* },
                <$ret as Reply>::get_reply,
            );
            <$ret as Reply>::settle(reply, &self.link)
        }
        proxy_methods!($($rest)*);
    };
}

/// The worker's dispatch: one `if` per listed call.
macro_rules! dispatch_calls {
    ($t:ident, $method:ident, $d:ident, $e:ident;) => {};
    ($t:ident, $method:ident, $d:ident, $e:ident; $id:literal out fn $name:ident(& $(mut $($m:lifetime)?)? self $(, $arg:ident : $ty:ty)* ; $out:ident : $oty:ty) -> $ret:ty; $($rest:tt)*) => {
        if $method == $id {
            $(let $arg = <<$ty as Arg<'_>>::Owned as Wire>::get($d)?;)*
            let mut $out = <$oty>::default();
            let r = $t.$name($(<$ty as Arg<'_>>::lend(&$arg),)* &mut $out);
            put_out(r, &$out, $e);
            return Ok(());
        }
        dispatch_calls!($t, $method, $d, $e; $($rest)*);
    };
    ($t:ident, $method:ident, $d:ident, $e:ident; $id:literal $mode:ident fn $name:ident(& $(mut $($m:lifetime)?)? self $(, $arg:ident : $ty:ty)*) -> $ret:ty; $($rest:tt)*) => {
        if $method == $id {
            $(let $arg = <<$ty as Arg<'_>>::Owned as Wire>::get($d)?;)*
            let r: $ret = $t.$name($(<$ty as Arg<'_>>::lend(&$arg)),*);
            Reply::put_reply(r, $e);
            return Ok(());
        }
        dispatch_calls!($t, $method, $d, $e; $($rest)*);
    };
}

/// Writes the proxy's impl of `$trait` and the worker's dispatch from one list of calls.
macro_rules! isolated {
    (impl $trait:ident for $proxy:ident; dispatch $dispatch:ident; $($list:tt)*) => {
        impl $trait for $proxy {
            proxy_methods!($($list)*);
        }

        /// Worker: decodes the arguments of call `method`, calls the module and appends the
        /// reply.
        pub(crate) fn $dispatch(
            target: &mut dyn $trait,
            method: u8,
            d: &mut Dec<'_>,
            e: &mut Enc,
        ) -> DResult<()> {
            dispatch_calls!(target, method, d, e; $($list)*);
            Err(DecodeError("an unknown call"))
        }
    };
}

/// An allocator module running in a worker process.
pub struct IsolatedAllocator {
    link: Link,
    instance: u32,
}

/// A sorter module running in a worker process.
pub struct IsolatedSorter {
    link: Link,
    instance: u32,
    /// Queue the per-offer calls instead of waiting for each (for the built-in allocator).
    posting: bool,
}

impl IsolatedAllocator {
    pub(crate) fn new(link: Link, instance: u32) -> IsolatedAllocator {
        IsolatedAllocator { link, instance }
    }
}

impl IsolatedSorter {
    pub(crate) fn new(link: Link, instance: u32, posting: bool) -> IsolatedSorter {
        IsolatedSorter { link, instance, posting }
    }
}

impl Drop for IsolatedAllocator {
    fn drop(&mut self) {
        self.link.drop_instance(self.instance);
    }
}

impl Drop for IsolatedSorter {
    fn drop(&mut self) {
        self.link.drop_instance(self.instance);
    }
}

crate::methods::allocator_methods!(isolated! {
    impl Allocator for IsolatedAllocator;
    dispatch dispatch_allocator;
});

crate::methods::sorter_methods!(isolated! {
    impl Sorter for IsolatedSorter;
    dispatch dispatch_sorter;
});
