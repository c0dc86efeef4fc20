module ztensor.example/ztensor

go 1.19
