//! zt_list: lists a tensor file and prints one tensor, through the C API from Zig.
//!
//!   zt_list FILE NAME     (zTensor, safetensors, GGUF or Tensogram)
//!
//! Build (Zig 0.14; the ctest lang_zig does this with the pinned PyPI `ziglang`):
//!   zig build-exe zt_list.zig -lc -I include -L build/lib -lztensor -rpath build/lib
const std = @import("std");
const c = @cImport(@cInclude("ztensor.h"));

/// "f32", "bf16" ...: the library's name of a dtype ("unknown" for a value outside zt_dtype).
fn dtypeName(dtype: u32) []const u8 {
    return std.mem.span(c.zt_dtype_name(dtype));
}

/// On failure: prints the library's message, then the status name, and returns an error.
fn check(status: c.zt_status, what: []const u8) !void {
    if (status == c.ZT_OK) return;
    // zt_last_error() is valid until the next zt_ call: print it before zt_status_name.
    std.debug.print("zt_list: {s}: {s}", .{ what, std.mem.span(c.zt_last_error()) });
    std.debug.print(" ({s})\n", .{std.mem.span(c.zt_status_name(@intCast(status)))});
    return error.ZtensorFailed;
}

pub fn main() !u8 {
    var gpa = std.heap.GeneralPurposeAllocator(.{}){};
    defer _ = gpa.deinit();
    const allocator = gpa.allocator();
    const args = try std.process.argsAlloc(allocator);
    defer std.process.argsFree(allocator, args);
    if (args.len != 3) {
        std.debug.print("usage: zt_list FILE NAME\n", .{});
        return 2;
    }
    const path = args[1];
    const name = args[2];
    const out = std.io.getStdOut().writer();

    var reader: ?*c.zt_reader = null;
    check(c.zt_open(path.ptr, &reader), path) catch return 1;
    defer c.zt_close(reader); // every pointer the reader lent out dies here

    const count = c.zt_object_count(reader);
    // "zt 1.2.0", "gguf 3", "safetensors " ...: zt_open reads every format the same way.
    try out.print("{s} {s}, {d} objects\n", .{ std.mem.span(c.zt_file_format(reader)), std.mem.span(c.zt_file_version(reader)), count });
    for (0..count) |i| {
        var info: c.zt_object_info = undefined;
        check(c.zt_object_get_info(reader, i, &info), "object info") catch return 1;
        // Names and shapes are borrowed from the reader: no copies.
        try out.print("  {s} {s} [", .{ std.mem.span(info.name), std.mem.span(info.format) });
        if (info.ndim > 0) {
            for (info.shape[0..info.ndim], 0..) |dim, d| {
                try out.print("{s}{d}", .{ if (d == 0) "" else ", ", dim });
            }
        }
        try out.print("]", .{});
        for (0..info.component_count) |k| {
            var comp: c.zt_component_info = undefined;
            check(c.zt_component_get_info(reader, i, k, &comp), "component info") catch return 1;
            try out.print(" {s}:{s}", .{ std.mem.span(comp.role), dtypeName(comp.dtype) });
            if (comp.type != null) try out.print("/{s}", .{std.mem.span(comp.type)});
            if (comp.encoding == c.ZT_ENCODING_ZSTD) try out.print("(zstd)", .{});
        }
        try out.print("\n", .{});
    }

    // One tensor: its "data" component converted to f32 into our own buffer ...
    var index: usize = 0;
    check(c.zt_object_find(reader, name.ptr, &index), name) catch return 1;
    var data_index: usize = 0;
    check(c.zt_component_find(reader, index, "data", &data_index), name) catch return 1;
    var comp: c.zt_component_info = undefined;
    check(c.zt_component_get_info(reader, index, data_index, &comp), name) catch return 1;
    var element: usize = 0; // bytes per element of the stored dtype
    check(c.zt_dtype_get_size(comp.dtype, &element), name) catch return 1;
    const n: usize = @intCast(comp.decoded_length / @as(u64, @intCast(element)));
    const values = try allocator.alloc(f32, n);
    defer allocator.free(values);
    check(c.zt_component_read_as(reader, index, "data", c.ZT_F32, values.ptr, n * @sizeOf(f32)), name) catch return 1;
    try out.print("{s} ({s}) as f32:", .{ name, dtypeName(comp.dtype) });
    for (values) |v| try out.print(" {d}", .{v});
    try out.print("\n", .{});

    // ... and, for f32 data, the same values in place: a view needs no buffer at all.
    if (comp.dtype == c.ZT_F32) {
        var view: c.zt_view = undefined;
        check(c.zt_component_view(reader, index, "data", &view), name) catch return 1;
        const in_place: [*]const f32 = @ptrCast(@alignCast(view.data));
        const same = std.mem.eql(f32, in_place[0..n], values);
        try out.print("view: {s}, {s} the copy\n", .{
            if (view.zero_copy) "zero-copy" else "decoded by the reader",
            if (same) "equal to" else "DIFFERENT FROM",
        });
        if (!same) return 1;
    }
    return 0;
}
