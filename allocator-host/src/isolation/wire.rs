//! The compact binary encoding of the calls between the host and a module worker.
//!
//! Little-endian fixed-width integers, `f64` as its bits, strings and lists as a `u32` length
//! then their bytes or elements. Every frame on the channel is a `u32` length then that many
//! bytes. Decoding never trusts a length: a list's length is checked against the bytes left
//! (every element takes at least one byte), so a hostile peer cannot make the decoder reserve
//! more memory than the frame it already sent.

use abi_stable::std_types::{ROption, Tuple2};
use allocator_api::abi::Parameter;
use allocator_api::allocator::{
    AgentCapabilities, Attribute, FrameworkCapabilities, InverseOffer, InverseOfferStatus,
    InverseOfferStatusEntry, Operation, OperationKind, RoleMinAllocatable, RoleQuota, RoleWeight,
    Unavailability,
};
use allocator_api::resources::{Range, ResourceFlags, Value};
use allocator_api::{
    AgentAllocation, AgentId, AgentInfo, Allocation, AllocatorOptions, ClientId, Constraint,
    ConstraintOp, ErrorKind, ExplainEntry, ExplainSubject, FrameworkId, FrameworkInfo,
    FrameworkOptions, GroupId, ModuleError, Name, OfferBatch, Quantities, Quota, RString, RVec,
    Request, Resource, Resources, Scalar, SorterConfig,
};

/// A frame the peer sent could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed message: {0}")]
pub struct DecodeError(pub &'static str);

/// Decoding's result.
pub type DResult<T> = std::result::Result<T, DecodeError>;

/// Writes values into a frame's bytes.
#[derive(Default)]
pub struct Enc {
    /// The bytes written so far.
    pub buf: Vec<u8>,
    /// The names written in the current frame, by position (see [`Enc::name`]).
    names: Vec<&'static str>,
}

/// Names per frame that are sent once and then by position.
const NAME_TABLE: usize = 64;
/// The bit that marks a name's position instead of its length.
const NAME_REF: u32 = 1 << 31;

impl Enc {
    /// Starts a frame: names are sent in full again.
    pub fn start_frame(&mut self) {
        self.names.clear();
    }

    /// A name: its text the first time in a frame (its position is then remembered by both
    /// sides), its position after that.
    pub fn name(&mut self, name: Name) {
        let s = name.as_str();
        if s.is_empty() {
            return self.u32(0);
        }
        // Interned names share their text, so comparing pointers finds repeats.
        if let Some(i) = self.names.iter().position(|n| std::ptr::eq(*n, s)) {
            return self.u32(NAME_REF | i as u32);
        }
        if self.names.len() < NAME_TABLE {
            self.names.push(s);
        }
        self.str(s);
    }

    /// One byte.
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    /// A `u32`, little-endian.
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// A `u64`, little-endian.
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// A length (as a `u32`; lists longer than that cannot cross).
    pub fn len(&mut self, n: usize) {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }
    /// A string: its length, then its bytes.
    pub fn str(&mut self, s: &str) {
        self.len(s.len());
        self.buf.extend_from_slice(s.as_bytes());
    }
}

/// Reads values from a frame's bytes.
pub struct Dec<'a> {
    bytes: &'a [u8],
    /// The names read so far (a reply names a handful of resources and roles thousands of
    /// times; interning each again would take the interner's lock every time).
    names: Vec<Name>,
}

impl<'a> Dec<'a> {
    /// A decoder over `bytes`.
    pub fn new(bytes: &'a [u8]) -> Dec<'a> {
        Dec { bytes, names: Vec::new() }
    }

    /// A name (see [`Enc::name`]), interned once per frame.
    pub fn name(&mut self) -> DResult<Name> {
        let head = self.u32()?;
        if head & NAME_REF != 0 {
            let i = (head & !NAME_REF) as usize;
            return self.names.get(i).copied().ok_or(DecodeError("a name position never sent"));
        }
        let n = head as usize;
        if n > self.bytes.len() {
            return Err(DecodeError("a length beyond the message"));
        }
        let s = std::str::from_utf8(self.take(n)?)
            .map_err(|_| DecodeError("a string that is not UTF-8"))?;
        if s.is_empty() {
            return Ok(Name::default());
        }
        let name = Name::new(s);
        if self.names.len() < NAME_TABLE {
            self.names.push(name);
        }
        Ok(name)
    }
    /// `true` when every byte was read.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
    fn take(&mut self, n: usize) -> DResult<&'a [u8]> {
        if self.bytes.len() < n {
            return Err(DecodeError("truncated"));
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }
    /// One byte.
    pub fn u8(&mut self) -> DResult<u8> {
        Ok(self.take(1)?[0])
    }
    /// A `u32`.
    pub fn u32(&mut self) -> DResult<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    /// A `u64`.
    pub fn u64(&mut self) -> DResult<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    /// A list length, checked against the bytes left.
    pub fn len(&mut self) -> DResult<usize> {
        let n = self.u32()? as usize;
        if n > self.bytes.len() {
            return Err(DecodeError("a length beyond the message"));
        }
        Ok(n)
    }
    /// A string.
    pub fn str(&mut self) -> DResult<&'a str> {
        let n = self.len()?;
        std::str::from_utf8(self.take(n)?).map_err(|_| DecodeError("a string that is not UTF-8"))
    }
}

/// A value that crosses the channel.
pub trait Wire: Sized {
    /// Appends the value.
    fn put(&self, e: &mut Enc);
    /// Reads a value.
    fn get(d: &mut Dec<'_>) -> DResult<Self>;
    /// Appends every value of `items` (a list's elements).
    fn put_all(items: &[Self], e: &mut Enc) {
        for item in items {
            item.put(e);
        }
    }
    /// Reads `n` values into `out`.
    fn get_all(d: &mut Dec<'_>, n: usize, out: &mut RVec<Self>) -> DResult<()> {
        for _ in 0..n {
            out.push(Self::get(d)?);
        }
        Ok(())
    }
}

macro_rules! wire_int {
    ($($t:ty => $put:ident, $get:ident);* $(;)?) => {$(
        impl Wire for $t {
            fn put(&self, e: &mut Enc) {
                e.$put((*self).into());
            }
            fn get(d: &mut Dec<'_>) -> DResult<$t> {
                d.$get()
            }
        }
    )*};
}
wire_int!(u8 => u8, u8; u32 => u32, u32; u64 => u64, u64);

impl Wire for bool {
    fn put(&self, e: &mut Enc) {
        e.u8(u8::from(*self));
    }
    fn get(d: &mut Dec<'_>) -> DResult<bool> {
        Ok(d.u8()? != 0)
    }
}

impl Wire for f64 {
    fn put(&self, e: &mut Enc) {
        e.u64(self.to_bits());
    }
    fn get(d: &mut Dec<'_>) -> DResult<f64> {
        Ok(f64::from_bits(d.u64()?))
    }
}

impl Wire for usize {
    fn put(&self, e: &mut Enc) {
        e.u64(*self as u64);
    }
    fn get(d: &mut Dec<'_>) -> DResult<usize> {
        usize::try_from(d.u64()?).map_err(|_| DecodeError("a count beyond usize"))
    }
}

impl Wire for String {
    fn put(&self, e: &mut Enc) {
        e.str(self);
    }
    fn get(d: &mut Dec<'_>) -> DResult<String> {
        Ok(d.str()?.to_owned())
    }
}

impl Wire for RString {
    fn put(&self, e: &mut Enc) {
        e.str(self);
    }
    fn get(d: &mut Dec<'_>) -> DResult<RString> {
        Ok(d.str()?.into())
    }
}

impl Wire for Name {
    fn put(&self, e: &mut Enc) {
        e.name(*self);
    }
    fn get(d: &mut Dec<'_>) -> DResult<Name> {
        d.name()
    }
}

impl<T: Wire> Wire for Option<T> {
    fn put(&self, e: &mut Enc) {
        match self {
            None => e.u8(0),
            Some(v) => {
                e.u8(1);
                v.put(e);
            }
        }
    }
    fn get(d: &mut Dec<'_>) -> DResult<Option<T>> {
        match d.u8()? {
            0 => Ok(None),
            1 => Ok(Some(T::get(d)?)),
            _ => Err(DecodeError("a bad option tag")),
        }
    }
}

/// Writes a list.
pub fn put_slice<T: Wire>(items: &[T], e: &mut Enc) {
    e.len(items.len());
    T::put_all(items, e);
}

/// Reads a list into `out` (cleared first), reusing its buffer.
pub fn get_into<T: Wire>(d: &mut Dec<'_>, out: &mut RVec<T>) -> DResult<()> {
    out.clear();
    let n = d.len()?;
    out.reserve(n);
    T::get_all(d, n, out)
}

impl<T: Wire> Wire for ROption<T> {
    fn put(&self, e: &mut Enc) {
        match self {
            ROption::RNone => e.u8(0),
            ROption::RSome(v) => {
                e.u8(1);
                v.put(e);
            }
        }
    }
    fn get(d: &mut Dec<'_>) -> DResult<ROption<T>> {
        Ok(Option::<T>::get(d)?.into())
    }
}

impl<A: Wire, B: Wire> Wire for Tuple2<A, B> {
    fn put(&self, e: &mut Enc) {
        self.0.put(e);
        self.1.put(e);
    }
    fn get(d: &mut Dec<'_>) -> DResult<Tuple2<A, B>> {
        Ok(Tuple2(A::get(d)?, B::get(d)?))
    }
}

impl<T: Wire> Wire for Vec<T> {
    fn put(&self, e: &mut Enc) {
        put_slice(self, e);
    }
    fn get(d: &mut Dec<'_>) -> DResult<Vec<T>> {
        let n = d.len()?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(T::get(d)?);
        }
        Ok(v)
    }
}

impl<T: Wire> Wire for RVec<T> {
    fn put(&self, e: &mut Enc) {
        put_slice(self, e);
    }
    fn get(d: &mut Dec<'_>) -> DResult<RVec<T>> {
        let mut v = RVec::new();
        get_into(d, &mut v)?;
        Ok(v)
    }
}

/// Newtypes over one integer.
macro_rules! wire_newtype {
    ($($t:ident($inner:ty)),* $(,)?) => {$(
        impl Wire for $t {
            fn put(&self, e: &mut Enc) {
                self.0.put(e);
            }
            fn get(d: &mut Dec<'_>) -> DResult<$t> {
                Ok($t(<$inner>::get(d)?))
            }
        }
    )*};
}
/// The integer handles: lists of them (a sort's answer) cross as one block of bytes.
macro_rules! wire_handle {
    ($($t:ident),*) => {$(
        impl Wire for $t {
            fn put(&self, e: &mut Enc) {
                e.u32(self.0);
            }
            fn get(d: &mut Dec<'_>) -> DResult<$t> {
                Ok($t(d.u32()?))
            }
            fn put_all(items: &[$t], e: &mut Enc) {
                e.buf.reserve(items.len() * 4);
                for item in items {
                    e.buf.extend_from_slice(&item.0.to_le_bytes());
                }
            }
            fn get_all(d: &mut Dec<'_>, n: usize, out: &mut RVec<$t>) -> DResult<()> {
                let bytes = d.take(n.checked_mul(4).ok_or(DecodeError("a length beyond the message"))?)?;
                out.extend(
                    bytes.chunks_exact(4).map(|c| $t(u32::from_le_bytes(c.try_into().expect("4 bytes")))),
                );
                Ok(())
            }
        }
    )*};
}
wire_handle!(AgentId, ClientId, FrameworkId);

wire_newtype!(
    ErrorKind(u8),
    ConstraintOp(u8),
    GroupId(u64),
    InverseOfferStatus(u8),
    OperationKind(u8),
    ResourceFlags(u8),
    FrameworkCapabilities(u32),
    AgentCapabilities(u32),
);

/// Structs whose fields all cross as they are, in declaration order.
macro_rules! wire_struct {
    ($($t:ident { $($f:ident),* $(,)? })*) => {$(
        impl Wire for $t {
            fn put(&self, e: &mut Enc) {
                $(self.$f.put(e);)*
            }
            fn get(d: &mut Dec<'_>) -> DResult<$t> {
                Ok($t { $($f: Wire::get(d)?),* })
            }
        }
    )*};
}
wire_struct! {
    ModuleError { kind, message }
    Attribute { name, value }
    FrameworkInfo { id, name, roles, capabilities }
    RoleMinAllocatable { role, sets }
    FrameworkOptions { suppressed_roles, min_allocatable_resources }
    AgentInfo { id, name, hostname, attributes, capabilities }
    Allocation { framework, agent, role, resources }
    InverseOffer { framework, agent, unavailability }
    InverseOfferStatusEntry { agent, framework, status, timestamp }
    Quota { guarantees, limits }
    RoleQuota { role, quota }
    RoleWeight { role, weight }
    Operation { kind, resources }
    OfferBatch { offers, inverse_offers }
    AgentAllocation { agent, resources }
    SorterConfig { fairness_excluded_resource_names, seed }
    Parameter { key, value }
    Request { role, group, count, min_count, resources, constraints }
    Constraint { attribute, op, values }
    ExplainSubject { kind, role, framework }
    ExplainEntry { code, text, numbers }
    Range { begin, end }
    AllocatorOptions {
        allocation_interval, fairness_excluded_resource_names, filter_gpu_resources,
        min_allocatable_resources, seed, recovery_timeout, agent_recovery_factor, role_sorter,
        framework_sorter,
    }
}

impl Wire for Unavailability {
    fn put(&self, e: &mut Enc) {
        self.start.put(e);
        self.duration.into_option().put(e);
    }
    fn get(d: &mut Dec<'_>) -> DResult<Unavailability> {
        Ok(Unavailability { start: f64::get(d)?, duration: Option::<f64>::get(d)?.into() })
    }
}

impl Wire for Scalar {
    fn put(&self, e: &mut Enc) {
        e.u64(self.millis() as u64);
    }
    fn get(d: &mut Dec<'_>) -> DResult<Scalar> {
        Ok(Scalar::from_millis(d.u64()? as i64))
    }
}

impl Wire for Value {
    fn put(&self, e: &mut Enc) {
        match self {
            Value::Scalar(s) => {
                e.u8(0);
                s.put(e);
            }
            Value::Ranges(r) => {
                e.u8(1);
                r.put(e);
            }
            Value::Set(s) => {
                e.u8(2);
                s.put(e);
            }
        }
    }
    fn get(d: &mut Dec<'_>) -> DResult<Value> {
        match d.u8()? {
            0 => Ok(Value::Scalar(Scalar::get(d)?)),
            1 => Ok(Value::Ranges(RVec::get(d)?)),
            2 => Ok(Value::Set(RVec::get(d)?)),
            _ => Err(DecodeError("a bad resource value tag")),
        }
    }
}

wire_struct! {
    Resource { name, reservation, volume, flags, value }
}

/// Resources cross entry by entry and are rebuilt with [`Resources::add_resource`] (canonical
/// on arrival, as the host's own arithmetic would make them).
impl Wire for Resources {
    fn put(&self, e: &mut Enc) {
        put_slice(self.entries(), e);
    }
    fn get(d: &mut Dec<'_>) -> DResult<Resources> {
        let n = d.len()?;
        let mut out = Resources::new();
        for _ in 0..n {
            out.add_resource(Resource::get(d)?);
        }
        Ok(out)
    }
}

impl Wire for Quantities {
    fn put(&self, e: &mut Enc) {
        e.len(self.iter().len());
        for q in self.iter() {
            q.name.put(e);
            q.value.put(e);
        }
    }
    fn get(d: &mut Dec<'_>) -> DResult<Quantities> {
        let n = d.len()?;
        let mut out = Quantities::new();
        for _ in 0..n {
            let name = Name::get(d)?;
            out.set(name, Scalar::get(d)?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: Wire + PartialEq + std::fmt::Debug>(v: T) {
        let mut e = Enc::default();
        v.put(&mut e);
        let mut d = Dec::new(&e.buf);
        assert_eq!(T::get(&mut d).unwrap(), v);
        assert!(d.is_empty());
    }

    #[test]
    fn resources_with_every_value_kind_cross_unchanged() {
        let r: Resources =
            "cpus:1.5;mem(r1){dynamic}:1024;ports:[31000-31005,32000-32000];zones:{a,b};disk(r1)[v1]:10"
                .parse()
                .unwrap();
        round_trip(r);
    }

    #[test]
    fn quantities_keep_their_zero_entries() {
        round_trip(Quantities::parse("cpus:0;mem:32").unwrap());
    }

    #[test]
    fn an_offer_batch_and_options_cross_unchanged() {
        let batch = OfferBatch {
            offers: vec![Allocation::new(
                FrameworkId(3),
                AgentId(7),
                "eng/ml",
                "cpus:2".parse().unwrap(),
            )]
            .into(),
            inverse_offers: vec![InverseOffer {
                framework: FrameworkId(1),
                agent: AgentId(2),
                unavailability: Unavailability { start: 5.0, duration: Some(3.0).into() },
            }]
            .into(),
        };
        round_trip(batch);
        round_trip(AllocatorOptions::default());
        round_trip(ModuleError::rejected("no such agent"));
    }

    #[test]
    fn a_name_repeated_in_a_frame_crosses_by_position_and_an_unsent_position_is_refused() {
        let r: Resources = "cpus:1;mem:2".parse().unwrap();
        let mut e = Enc::default();
        r.put(&mut e);
        let first = e.buf.len();
        r.put(&mut e);
        assert!(e.buf.len() - first < first, "the second copy refers to the names");
        let mut d = Dec::new(&e.buf);
        assert_eq!(Resources::get(&mut d).unwrap(), r);
        assert_eq!(Resources::get(&mut d).unwrap(), r);
        let mut e = Enc::default();
        e.u32(1);
        e.u32(NAME_REF | 5);
        assert_eq!(
            Resources::get(&mut Dec::new(&e.buf)),
            Err(DecodeError("a name position never sent"))
        );
    }

    #[test]
    fn a_length_beyond_the_message_is_refused_before_anything_is_reserved() {
        let mut e = Enc::default();
        e.u32(u32::MAX);
        let mut d = Dec::new(&e.buf);
        assert_eq!(Vec::<Allocation>::get(&mut d), Err(DecodeError("a length beyond the message")));
    }
}
