# Projects on the R side: local stores and local bare git remotes only.

r_store <- function(store_dir, remote = NULL, developer = TRUE) {
  dir.create(store_dir, recursive = TRUE, showWarnings = FALSE)
  if (developer) {
    datom_store(
      data = datom_store_local(store_dir),
      github_pat = "local-remote-needs-none", data_repo_url = remote, validate = FALSE
    )
  } else {
    datom_store(data = datom_store_local(store_dir), validate = FALSE)
  }
}

r_dev <- function(path, store_dir, remote) {
  datom_get_conn(path = path, store = r_store(store_dir, remote))
}

r_reader <- function(store_dir, project) {
  datom_get_conn(store = r_store(store_dir, developer = FALSE), project_name = project)
}

r_conn <- function(c) {
  if (!is.null(c$path)) r_dev(c$path, c$store, c$remote) else r_reader(c$store, c$project)
}

r_init <- function(path, project, store, remote, mode = NULL, set = NULL) {
  if (!dir.exists(remote)) {
    dir.create(remote, recursive = TRUE)
    git2r::init(remote, bare = TRUE)
  }
  if (is.null(mode)) {
    datom_init_repo(path, project, r_store(store, remote))
  } else {
    datom_init_repo(path, project, r_store(store, remote), mode = mode, set = set)
  }
  TRUE
}

r_clone <- function(path, store, remote) {
  datom_clone(path = path, store = r_store(store, remote))
  TRUE
}

r_pull <- function(path, store, remote) {
  datom_pull(r_dev(path, store, remote))
  TRUE
}

# One write. `data`: a frame name (lib_data.R) or NULL for a metadata-only re-sync;
# `parents`: list of {table, version}, resolved through datom_parent().
r_write <- function(conn, name, data, metadata = NULL, parents = NULL, message = NULL) {
  con <- r_conn(conn)
  recs <- NULL
  if (length(parents)) {
    recs <- lapply(parents, function(p) datom_parent(con, p$table, p$version))
  }
  frame <- if (is.data.frame(data)) data else r_frame(data)
  res <- datom_write(con, data = frame, name = name, metadata = metadata,
                     parents = recs, message = message)
  list(action = res$action, version = res$metadata_sha, data_sha = res$data_sha)
}

# Write back the current version of a table as read: an identical rewrite.
r_rewrite_current <- function(conn, name) {
  con <- r_conn(conn)
  meta <- datom_storage_read_json(con, paste0(name, "/.metadata/metadata.json"))
  recs <- NULL
  if (length(meta$parents)) {
    recs <- lapply(meta$parents, function(p) datom_parent(con, p$table, p$version))
  }
  res <- datom_write(con, data = datom_read(con, name), name = name,
                     metadata = meta$custom, parents = recs)
  list(action = res$action, version = res$metadata_sha, data_sha = res$data_sha)
}

r_scan <- function(conn) {
  m <- datom_sync_manifest(r_conn(conn))
  lapply(seq_len(nrow(m)), function(i) list(name = m$name[[i]], status = m$status[[i]]))
}

r_sync <- function(conn) {
  con <- r_conn(conn)
  m <- datom_sync_manifest(con)
  res <- datom_sync(con, m)
  lapply(seq_len(nrow(res)), function(i) list(
    name = res$name[[i]], status = res$status[[i]],
    result = if ("result" %in% names(res)) res$result[[i]] else NA
  ))
}

r_validate <- function(conn, fix = FALSE) {
  v <- datom_validate(r_conn(conn), fix = fix)
  tables <- v$tables
  bad <- list()
  if (is.data.frame(tables) && nrow(tables)) {
    ok_cols <- vapply(tables, is.logical, logical(1))
    for (i in seq_len(nrow(tables))) {
      row <- as.list(tables[i, , drop = FALSE])
      if (any(unlist(row[ok_cols]) %in% FALSE)) bad[[length(bad) + 1]] <- row
    }
  }
  list(valid = isTRUE(v$valid), bad_rows = bad)
}

# Everything a reader of the project can see, with every version read back and re-hashed
# by R itself.
r_describe <- function(conn, read_versions = TRUE) {
  con <- r_conn(conn)
  lst <- datom_list(con, short_hash = FALSE, include_versions = TRUE)
  out <- list()
  for (i in seq_len(nrow(lst))) {
    name <- lst$name[[i]]
    kind <- if ("kind" %in% names(lst)) lst$kind[[i]] else "table"
    entry <- list(kind = kind, current_version = lst$current_version[[i]])
    if (!identical(kind, "set")) {
      h <- datom_history(con, name, n = 1000L, short_hash = FALSE)
      versions <- list()
      for (j in seq_len(nrow(h))) {
        v <- list(version = h$version[[j]], data_sha = h$data_sha[[j]])
        if (read_versions) {
          df <- datom_read(con, name, version = h$version[[j]])
          v$rehash <- datom:::.datom_canonical_hash(df)$data_sha
          v$nrow <- nrow(df)
        }
        versions[[j]] <- v
      }
      entry$versions <- versions
      par <- datom_get_parents(con, name)
      entry$parents <- if (is.null(par)) list() else par
    }
    out[[name]] <- entry
  }
  out
}

r_read_hash <- function(conn, name, version = NULL) {
  df <- datom_read(r_conn(conn), name, version = version)
  list(data_sha = datom:::.datom_canonical_hash(df)$data_sha, nrow = nrow(df))
}

r_current <- function(conn, name) {
  datom_history(r_conn(conn), name, n = 1L, short_hash = FALSE)$version[[1]]
}

# A document exactly as R parsed it from storage (for key-by-key comparisons the bytes
# on disk are read by Python directly).
r_store_json <- function(conn, key) datom_storage_read_json(r_conn(conn), key)
