//! The export macro that turns a crate into a module library.

/// Exports the listed sorters and allocators as this `cdylib`'s modules.
///
/// Each entry names the kind (`sorter` or `allocator`) and gives the module's name, author,
/// description, a `create` function and optionally a `compatible` check:
///
/// * `create` is `fn(&SorterConfig, Parameters) -> Result<S, E>` for a sorter `S: Sorter` and
///   `fn(&AllocatorOptions, Parameters) -> Result<A, E>` for an allocator `A: Allocator`, where
///   `E: Display` is shown to the operator as is.
/// * `compatible` is `fn() -> bool`; `false` makes the host refuse the module.
///
/// The library is an ABI 3 library ([`ModuleLibraryV3`](crate::abi::ModuleLibraryV3)): its
/// sorters and allocators carry every [`Sorter`](crate::Sorter) and
/// [`Allocator`](crate::Allocator) method across the boundary (`sort_prefix`,
/// `keep_scalars_only`, `set_time`, `request` and `explain` included).
///
/// The macro fills in the API version, wraps every method so that a panic becomes an error
/// instead of crossing the boundary, and forwards the module's `log` records to the host's
/// logger. Use it once per crate, in a crate with `crate-type = ["cdylib"]` (add `"rlib"` to
/// also link it statically).
///
/// ```ignore
/// allocator_api::export_modules! {
///     sorter {
///         name: "fifo",
///         author: "Example Org",
///         description: "first come, first served",
///         create: |_, _| Ok::<_, String>(Fifo::default()),
///     },
/// }
/// ```
#[macro_export]
macro_rules! export_modules {
    ($($entries:tt)+) => {
        $crate::__export_library! { v3, $($entries)+ }
    };
}

/// Exports the listed modules as an ABI 2 library
/// ([`ModuleLibraryV2`](crate::abi::ModuleLibraryV2), version
/// [`ABI_VERSION_2`](crate::abi::ABI_VERSION_2)), as [`export_modules!`] did before ABI 3: no
/// `set_time`, `request` or `explain` at the boundary. Only for tests and fixtures that prove
/// ABI 2 libraries still load; same entries as [`export_modules!`].
#[doc(hidden)]
#[macro_export]
macro_rules! export_modules_abi2 {
    ($($entries:tt)+) => {
        $crate::__export_library! { v2, $($entries)+ }
    };
}

/// Exports the listed modules as an ABI 1 library ([`ModuleLibrary`](crate::abi::ModuleLibrary),
/// version [`ABI_VERSION`](crate::abi::ABI_VERSION)), as [`export_modules!`] did before ABI 2:
/// its sorters have no `sort_prefix`, `keep_scalars_only` or `set_time` at the boundary. Only for tests and
/// fixtures that prove ABI 1 libraries still load; same entries as [`export_modules!`].
#[doc(hidden)]
#[macro_export]
macro_rules! export_modules_abi1 {
    ($($entries:tt)+) => {
        $crate::__export_library! { v1, $($entries)+ }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __export_library {
    ($abi:ident, $($kind:ident {
        name: $name:expr,
        author: $author:expr,
        description: $description:expr,
        create: $create:expr
        $(, compatible: $compatible:expr)?
        $(,)?
    }),+ $(,)?) => {
        #[doc(hidden)]
        #[unsafe(export_name = "_1as_0lib_1header_0root_bmodule_bloader")]
        pub static __ALLOCATOR_API_LIBRARY_HEADER: $crate::abi::__private::LibHeader = {
            extern "C" fn __allocator_api_root() -> $crate::abi::__private::RootModuleResult {
                $crate::abi::__private::__call_root_module_loader(|| {
                    $crate::__export_abi!($abi, build)(::std::vec![
                        $($crate::__export_descriptor!($abi, $kind, $name, $author, $description, $create $(, $compatible)?)),+
                    ])
                })
            }
            unsafe {
                $crate::abi::__private::LibHeader::from_constructor::<$crate::__export_abi!($abi, root)>(
                    __allocator_api_root,
                    $crate::abi::__private::CheckTypeLayout::Yes,
                )
            }
        };
    };
}

/// The items of one ABI version the export macros name.
#[doc(hidden)]
#[macro_export]
macro_rules! __export_abi {
    (v1, build) => {
        $crate::abi::build_library
    };
    (v1, root) => {
        $crate::abi::ModuleLibraryRef
    };
    (v1, descriptor) => {
        $crate::abi::ModuleDescriptor
    };
    (v1, factory) => {
        $crate::abi::ModuleFactory
    };
    (v1, sorter_box) => {
        $crate::abi::SorterBox
    };
    (v1, box_sorter) => {
        $crate::abi::sorter_box
    };
    (v1, allocator_box) => {
        $crate::abi::AllocatorBox
    };
    (v1, box_allocator) => {
        $crate::abi::allocator_box
    };
    (v2, build) => {
        $crate::abi::build_library_v2
    };
    (v2, root) => {
        $crate::abi::ModuleLibraryV2Ref
    };
    (v2, descriptor) => {
        $crate::abi::ModuleDescriptorV2
    };
    (v2, factory) => {
        $crate::abi::ModuleFactoryV2
    };
    (v2, sorter_box) => {
        $crate::abi::SorterBoxV2
    };
    (v2, box_sorter) => {
        $crate::abi::sorter_box_v2
    };
    (v2, allocator_box) => {
        $crate::abi::AllocatorBox
    };
    (v2, box_allocator) => {
        $crate::abi::allocator_box
    };
    (v3, build) => {
        $crate::abi::build_library_v3
    };
    (v3, root) => {
        $crate::abi::ModuleLibraryV3Ref
    };
    (v3, descriptor) => {
        $crate::abi::ModuleDescriptorV3
    };
    (v3, factory) => {
        $crate::abi::ModuleFactoryV3
    };
    (v3, sorter_box) => {
        $crate::abi::SorterBoxV3
    };
    (v3, box_sorter) => {
        $crate::abi::sorter_box_v3
    };
    (v3, allocator_box) => {
        $crate::abi::AllocatorBoxV3
    };
    (v3, box_allocator) => {
        $crate::abi::allocator_box_v3
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __export_descriptor {
    ($abi:ident, sorter, $name:expr, $author:expr, $description:expr, $create:expr $(, $compatible:expr)?) => {{
        type __Descriptor = $crate::__export_abi!($abi, descriptor);
        type __Factory = $crate::__export_abi!($abi, factory);
        __Descriptor {
            name: $crate::abi::__private::RStr::from_str($name),
            author: $crate::abi::__private::RStr::from_str($author),
            description: $crate::abi::__private::RStr::from_str($description),
            api_version: $crate::abi::__private::RStr::from_str($crate::abi::API_VERSION),
            compatible: $crate::__export_compatible!($($compatible)?),
            factory: __Factory::Sorter({
                extern "C" fn __allocator_api_create(
                    config: &$crate::SorterConfig,
                    parameters: $crate::abi::__private::RSlice<'_, $crate::abi::Parameter>,
                ) -> $crate::abi::__private::RResult<$crate::__export_abi!($abi, sorter_box), $crate::ModuleError> {
                    $crate::abi::run_factory(config, parameters, $create, $crate::__export_abi!($abi, box_sorter))
                }
                __allocator_api_create
            }),
        }
    }};
    ($abi:ident, allocator, $name:expr, $author:expr, $description:expr, $create:expr $(, $compatible:expr)?) => {{
        type __Descriptor = $crate::__export_abi!($abi, descriptor);
        type __Factory = $crate::__export_abi!($abi, factory);
        __Descriptor {
            name: $crate::abi::__private::RStr::from_str($name),
            author: $crate::abi::__private::RStr::from_str($author),
            description: $crate::abi::__private::RStr::from_str($description),
            api_version: $crate::abi::__private::RStr::from_str($crate::abi::API_VERSION),
            compatible: $crate::__export_compatible!($($compatible)?),
            factory: __Factory::Allocator({
                extern "C" fn __allocator_api_create(
                    options: &$crate::AllocatorOptions,
                    parameters: $crate::abi::__private::RSlice<'_, $crate::abi::Parameter>,
                ) -> $crate::abi::__private::RResult<$crate::__export_abi!($abi, allocator_box), $crate::ModuleError> {
                    $crate::abi::run_factory(options, parameters, $create, $crate::__export_abi!($abi, box_allocator))
                }
                __allocator_api_create
            }),
        }
    }};
}

#[doc(hidden)]
#[macro_export]
macro_rules! __export_compatible {
    () => {
        $crate::abi::__private::ROption::RNone
    };
    ($compatible:expr) => {{
        extern "C" fn __allocator_api_compatible() -> bool {
            let check: fn() -> bool = $compatible;
            $crate::abi::run_compatible(check)
        }
        $crate::abi::__private::ROption::RSome(
            __allocator_api_compatible as extern "C" fn() -> bool,
        )
    }};
}
