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
    ($($kind:ident {
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
                    $crate::abi::build_library(::std::vec![
                        $($crate::__export_descriptor!($kind, $name, $author, $description, $create $(, $compatible)?)),+
                    ])
                })
            }
            unsafe {
                $crate::abi::__private::LibHeader::from_constructor::<$crate::abi::ModuleLibraryRef>(
                    __allocator_api_root,
                    $crate::abi::__private::CheckTypeLayout::Yes,
                )
            }
        };
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __export_descriptor {
    (sorter, $name:expr, $author:expr, $description:expr, $create:expr $(, $compatible:expr)?) => {
        $crate::abi::ModuleDescriptor {
            name: $crate::abi::__private::RStr::from_str($name),
            author: $crate::abi::__private::RStr::from_str($author),
            description: $crate::abi::__private::RStr::from_str($description),
            api_version: $crate::abi::__private::RStr::from_str($crate::abi::API_VERSION),
            compatible: $crate::__export_compatible!($($compatible)?),
            factory: $crate::abi::ModuleFactory::Sorter({
                extern "C" fn __allocator_api_create(
                    config: &$crate::SorterConfig,
                    parameters: $crate::abi::__private::RSlice<'_, $crate::abi::Parameter>,
                ) -> $crate::abi::__private::RResult<$crate::abi::SorterBox, $crate::ModuleError> {
                    $crate::abi::run_factory(config, parameters, $create, $crate::abi::sorter_box)
                }
                __allocator_api_create
            }),
        }
    };
    (allocator, $name:expr, $author:expr, $description:expr, $create:expr $(, $compatible:expr)?) => {
        $crate::abi::ModuleDescriptor {
            name: $crate::abi::__private::RStr::from_str($name),
            author: $crate::abi::__private::RStr::from_str($author),
            description: $crate::abi::__private::RStr::from_str($description),
            api_version: $crate::abi::__private::RStr::from_str($crate::abi::API_VERSION),
            compatible: $crate::__export_compatible!($($compatible)?),
            factory: $crate::abi::ModuleFactory::Allocator({
                extern "C" fn __allocator_api_create(
                    options: &$crate::AllocatorOptions,
                    parameters: $crate::abi::__private::RSlice<'_, $crate::abi::Parameter>,
                ) -> $crate::abi::__private::RResult<$crate::abi::AllocatorBox, $crate::ModuleError> {
                    $crate::abi::run_factory(options, parameters, $create, $crate::abi::allocator_box)
                }
                __allocator_api_create
            }),
        }
    };
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
