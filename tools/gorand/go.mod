module gorand

go 1.22
