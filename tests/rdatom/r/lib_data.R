# The tables both languages build from scratch (tests/rdatom/frames.py is the Python twin).
# Missing doubles are literal NA_real_, never the result of arithmetic: R datom encodes an
# NA that went through arithmetic with other bits (FORMAT2.md section 8).
`%||%` <- function(a, b) if (is.null(a)) b else a

r_frame <- function(name) {
  switch(name,
    dm_v1 = data.frame(
      USUBJID = c("S1", "S2", "S3"),
      AGE = c(34L, NA, 51L),
      WEIGHT = c(70.5, NA, 88.25),
      SEX = c("F", NA, "M"),
      ENROLLED = c(TRUE, FALSE, NA),
      RFSTDTC = as.Date(c("2026-01-05", NA, "2026-02-11")),
      stringsAsFactors = FALSE
    ),
    dm_v2 = data.frame(
      USUBJID = c("S1", "S2", "S3", "S4"),
      AGE = c(34L, NA, 51L, 47L),
      WEIGHT = c(70.5, NA, 88.25, 61),
      SEX = c("F", NA, "M", "F"),
      ENROLLED = c(TRUE, FALSE, NA, TRUE),
      RFSTDTC = as.Date(c("2026-01-05", NA, "2026-02-11", "2026-03-02")),
      stringsAsFactors = FALSE
    ),
    adsl = data.frame(
      USUBJID = c("S1", "S2", "S3"),
      AGEGR = c("<50", NA, ">=50"),
      SAFFL = c(TRUE, TRUE, FALSE),
      stringsAsFactors = FALSE
    ),
    adae = data.frame(
      USUBJID = c("S1", "S2"),
      AESEVN = c(1L, 2L),
      stringsAsFactors = FALSE
    ),
    lb = data.frame(
      PARAM = c("ALT", "AST", "ALT"),
      AVAL = c(21.5, NA, 40),
      stringsAsFactors = FALSE
    ),
    lb_v2 = data.frame(
      PARAM = c("ALT", "AST", "ALT", "AST"),
      AVAL = c(21.5, NA, 40, 33.25),
      stringsAsFactors = FALSE
    ),
    lb_v3 = data.frame(
      PARAM = c("ALT", "ALT"),
      AVAL = c(NA, 19),
      stringsAsFactors = FALSE
    ),
    # The quirk itself: NA that went through arithmetic keeps other bits in memory.
    lb_arith = data.frame(
      PARAM = c("ALT", "AST", "ALT"),
      AVAL = c(21.5, NA, 40) * 1,
      stringsAsFactors = FALSE
    ),
    stop("no frame named ", name)
  )
}

# R's own data_sha of a data frame (the oracle for every re-hash).
r_hash_frame <- function(name) datom:::.datom_canonical_hash(r_frame(name))$data_sha

r_write_csv <- function(name, path) {
  # Bytes fixed here so both languages onboard the very same file.
  lines <- switch(name,
    ae = c("USUBJID,AETERM,AESEV,AESTDY", "S1,Headache,MILD,3", "S2,Nausea,,", "S3,Rash,SEVERE,12"),
    stop("no csv named ", name)
  )
  dir.create(dirname(path), recursive = TRUE, showWarnings = FALSE)
  con <- file(path, "wb")
  writeLines(lines, con, sep = "\n")
  close(con)
  TRUE
}
