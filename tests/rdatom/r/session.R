# One R process per test scenario: it loads one datom version once, then answers calls.
# Protocol (stdin/stdout, one line each way): Python writes a JSON request
# {"fn": ..., "args": {...}, "out": <path>}; R calls fn(args), writes the JSON response
# {"ok": true, "value": ...} or {"ok": false, "error": ...} to <path>, then prints the
# marker line. datom's own messages go to stderr, which the test keeps as a log.
args <- commandArgs(trailingOnly = TRUE)
datom_version <- args[[1]]
here <- args[[2]]
lib <- Sys.getenv("RDATOM_LIB")
.libPaths(c(file.path(lib, paste0("datom-", datom_version)), file.path(lib, "shims"), .libPaths()))
suppressPackageStartupMessages({
  library(datom)
  library(jsonlite)
})
if (as.character(packageVersion("datom")) != datom_version) {
  stop("loaded datom ", as.character(packageVersion("datom")), ", wanted ", datom_version)
}
for (f in sort(list.files(here, pattern = "^lib_.*[.]R$", full.names = TRUE))) source(f)

marker <- "\001datom-r-done"
stdin_con <- file("stdin", "r")
cat(marker, "\n", sep = "")
flush(stdout())
repeat {
  line <- readLines(stdin_con, n = 1)
  if (!length(line) || identical(line, "quit")) break
  req <- fromJSON(line, simplifyVector = FALSE)
  res <- tryCatch(
    list(ok = TRUE, value = do.call(req$fn, req$args %||% list())),
    error = function(e) list(ok = FALSE, error = paste(conditionMessage(e), collapse = "\n"))
  )
  # The same options everywhere: NA and NULL as null, full precision, scalars unboxed.
  writeLines(
    toJSON(res, auto_unbox = TRUE, null = "null", na = "null", digits = NA, force = TRUE),
    req$out
  )
  cat(marker, "\n", sep = "")
  flush(stdout())
}
