%% dets_log_meta: a reproduction of Ra's DETS-based ra_log_meta, the peer
%% ra_meta_bench measures strata_ra_log_meta against. Written for the
%% benchmark from the facts of Ra v3.1.10's src/ra_log_meta.erl and of
%% gen_batch_server (the process Ra runs it in); no code copied.
%%
%% What it reproduces:
%%  - The API and messages: store/4 and delete/2 are casts ({'$gen_cast', _}),
%%    store_sync/4 and delete_sync/2 gen calls with Ra's 30 s timeout, fetch/3,4
%%    an ets:lookup_element on the process's public named table (position 2, 3
%%    or 4 of {UId, CurrentTerm, VotedFor, LastApplied}), `undefined` when the
%%    row or the table is missing.
%%  - The process: one process owns a DETS file <data_dir>/meta.dets, opened
%%    with {auto_save, 5000}, and an ETS table of the same name filled from it
%%    at start (dets:to_ets). It drains its mailbox into batches as
%%    gen_batch_server does: a batch ends when the mailbox is empty or when it
%%    holds batch_size messages; batch_size starts at 32, doubles (up to 8192)
%%    after a full batch and halves (down to 32) after one the empty mailbox
%%    ended.
%%  - A batch: its changes are merged per UId into rows (read from ETS the
%%    first time a batch touches a UId), with the rabbitmq/ra#111 rule (a
%%    different current_term clears voted_for); a delete removes the row from
%%    DETS and ETS at once. Then the changed rows go to ets:insert and to one
%%    dets:insert, and dets:sync runs only if the batch holds a call
%%    (store_sync or delete_sync). The callers are answered after that sync.
%%    Terminating syncs and closes the file.
%%
%% What it leaves out: the sys protocol and debug options of gen_batch_server
%% (stop/1 is a message of its own), hibernation, Ra's logging, ra_lib's
%% directory creation with its error handling; it adds two counters (batches,
%% syncs and calls answered: stats/1) that Ra has not.
-module(dets_log_meta).

-export([start_link/1,
         stop/1,
         stats/1,
         store/4,
         store_sync/4,
         delete/2,
         delete_sync/2,
         fetch/3,
         fetch/4]).

-export([init_it/2]).

-define(TIMEOUT, 30000).
-define(AUTO_SAVE_MS, 5000).
-define(MIN_BATCH, 32).
-define(MAX_BATCH, 8192).

-record(st, {name :: atom(),
             parent :: pid(),
             batch = [] :: list(),
             count = 0 :: non_neg_integer(),
             batch_size = ?MIN_BATCH :: pos_integer(),
             batches = 0 :: non_neg_integer(),
             syncs = 0 :: non_neg_integer(),
             calls = 0 :: non_neg_integer()}).

%% ---- API (as ra_log_meta's) ----

%% Cfg as Ra's system config: #{name := _, data_dir := Dir,
%% names := #{log_meta := Name}}.
start_link(#{names := #{log_meta := _}} = Cfg) ->
    proc_lib:start_link(?MODULE, init_it, [self(), Cfg]).

stop(Name) ->
    Ref = erlang:monitor(process, Name),
    Name ! {'$dets_log_meta_stop', self(), Ref},
    receive
        {Ref, ok} -> erlang:demonitor(Ref, [flush]), ok;
        {'DOWN', Ref, process, _, Reason} -> {error, Reason}
    end.

%% Counters of this reproduction (not in Ra): batches run, dets:sync calls,
%% store_sync/delete_sync callers answered.
stats(Name) ->
    Ref = erlang:monitor(process, Name),
    Name ! {'$dets_log_meta_stats', self(), Ref},
    receive
        {Ref, Stats} -> erlang:demonitor(Ref, [flush]), Stats;
        {'DOWN', Ref, process, _, Reason} -> exit(Reason)
    end.

store(Name, UId, Key, Value) when is_atom(Name) ->
    gen_server:cast(Name, {store, UId, Key, Value}).

store_sync(Name, UId, Key, Value) ->
    gen_server:call(Name, {store, UId, Key, Value}, ?TIMEOUT).

delete(Name, UId) ->
    gen_server:cast(Name, {delete, UId}).

delete_sync(Name, UId) ->
    gen_server:call(Name, {delete, UId}, ?TIMEOUT).

fetch(Name, UId, current_term) -> lookup(Name, UId, 2);
fetch(Name, UId, voted_for) -> lookup(Name, UId, 3);
fetch(Name, UId, last_applied) -> lookup(Name, UId, 4).

fetch(Name, UId, Key, Default) ->
    case fetch(Name, UId, Key) of
        undefined -> Default;
        Value -> Value
    end.

lookup(Name, UId, Pos) ->
    try
        ets:lookup_element(Name, UId, Pos)
    catch
        _:badarg -> undefined
    end.

%% ---- the process ----

init_it(Parent, #{data_dir := Dir, names := #{log_meta := Name}}) ->
    true = register(Name, self()),
    process_flag(trap_exit, true),
    ok = filelib:ensure_path(Dir),
    File = filename:join(Dir, "meta.dets"),
    {ok, Name} = dets:open_file(Name, [{file, File}, {auto_save, ?AUTO_SAVE_MS}]),
    Name = ets:new(Name, [named_table, public, {read_concurrency, true}]),
    Name = dets:to_ets(Name, Name),
    proc_lib:init_ack(Parent, {ok, self()}),
    wait(#st{name = Name, parent = Parent}).

%% Nothing batched: block for the next message.
wait(St) ->
    receive
        Msg -> take(Msg, St)
    end.

%% A batch is open: take what the mailbox holds, up to batch_size.
more(#st{count = C, batch_size = Size} = St) when C >= Size ->
    wait((run_batch(St))#st{batch_size = min(?MAX_BATCH, Size * 2)});
more(St) ->
    receive
        Msg -> take(Msg, St)
    after 0 ->
        St1 = run_batch(St),
        wait(St1#st{batch_size = max(?MIN_BATCH, St1#st.batch_size div 2)})
    end.

take({'$gen_cast', Req}, #st{batch = B, count = C} = St) ->
    more(St#st{batch = [{cast, Req} | B], count = C + 1});
take({'$gen_call', From, Req}, #st{batch = B, count = C} = St) ->
    more(St#st{batch = [{call, From, Req} | B], count = C + 1});
take({'$dets_log_meta_stats', Pid, Ref}, St) ->
    Pid ! {Ref, #{batches => St#st.batches, syncs => St#st.syncs, calls => St#st.calls}},
    continue(St);
take({'$dets_log_meta_stop', Pid, Ref}, St) ->
    finish(run_batch(St)),
    Pid ! {Ref, ok},
    exit(normal);
take({'EXIT', Parent, Reason}, #st{parent = Parent} = St) ->
    finish(run_batch(St)),
    exit(Reason);
take(_Other, St) ->
    continue(St).

continue(#st{count = 0} = St) -> wait(St);
continue(St) -> more(St).

finish(#st{name = Name}) ->
    ok = dets:sync(Name),
    _ = dets:close(Name),
    ok.

run_batch(#st{count = 0} = St) ->
    St;
run_batch(#st{name = Tab, batch = Rev, batches = NB, syncs = NS, calls = NC} = St) ->
    {Rows, Callers, Sync} = lists:foldl(fun(Item, Acc) -> apply_item(Tab, Item, Acc) end,
                                        {#{}, [], false}, lists:reverse(Rev)),
    Changed = maps:values(Rows),
    true = ets:insert(Tab, Changed),
    ok = dets:insert(Tab, Changed),
    case Sync of
        true -> ok = dets:sync(Tab);
        false -> ok
    end,
    lists:foreach(fun(From) -> gen:reply(From, ok) end, lists:reverse(Callers)),
    St#st{batch = [], count = 0, batches = NB + 1,
          syncs = NS + case Sync of true -> 1; false -> 0 end,
          calls = NC + length(Callers)}.

apply_item(Tab, {cast, Req}, {Rows, Callers, Sync}) ->
    {apply_req(Tab, Req, Rows), Callers, Sync};
apply_item(Tab, {call, From, Req}, {Rows, Callers, _Sync}) ->
    {apply_req(Tab, Req, Rows), [From | Callers], true}.

apply_req(Tab, {store, UId, Key, Value}, Rows) ->
    Row = case Rows of
              #{UId := R} -> R;
              _ ->
                  case ets:lookup(Tab, UId) of
                      [R] -> R;
                      [] -> {UId, undefined, undefined, undefined}
                  end
          end,
    Rows#{UId => set(Key, Value, Row)};
apply_req(Tab, {delete, UId}, Rows) ->
    _ = dets:delete(Tab, UId),
    true = ets:delete(Tab, UId),
    maps:remove(UId, Rows).

%% rabbitmq/ra#111: a new current_term clears voted_for in the same row.
set(current_term, Term, {_, Term, _, _} = Row) -> Row;
set(current_term, Term, {UId, _, _, Applied}) -> {UId, Term, undefined, Applied};
set(voted_for, Vote, Row) -> setelement(3, Row, Vote);
set(last_applied, Index, Row) -> setelement(4, Row, Index).
