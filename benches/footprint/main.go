// The load of scripts/footprint: fills a Queen node with records so the
// script can weigh what the node keeps for them (RSS, store checkpoint,
// boot time). Three subcommands:
//
//	footprint kafka --brokers HOST:PORT --topic T --partitions P --records N
//	    creates topic T with P partitions (kadm CreateTopics), then produces
//	    N records of --size bytes (random, so incompressible), record i to
//	    partition i % P, from --producers clients at once: the first half of
//	    the records from idempotent producers (franz-go's default), the other
//	    half from non-idempotent ones (DisableIdempotentWrite), all acks=all.
//	footprint http --url http://HOST:PORT --queue Q --partitions K --transactions N
//	    N items over POST /api/v1/push, --batch items a request, --concurrency
//	    requests at once; item i carries the transactionId <run>-<i> (all
//	    distinct) and goes to partition p<i % K> of queue Q.
//	footprint mdb-used DATA.MDB
//	    prints the pages an LMDB file's trees use, times the page size: the
//	    checkpoint's live bytes, without the pages on LMDB's free list.
//	footprint free-port
//	    prints a TCP port of 127.0.0.1 free to listen on, below the kernel's
//	    ephemeral range, so that no outgoing connection takes it while the
//	    node it is meant for is down between two starts.
//
// kafka and http print one line `rate=<records/s> records=<n> seconds=<s>`
// last, and exit non-zero on any failed produce or push.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: footprint kafka|http|mdb-used|free-port ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "kafka":
		err = kafkaMain(os.Args[2:])
	case "http":
		err = httpMain(os.Args[2:])
	case "mdb-used":
		err = mdbUsedMain(os.Args[2:])
	case "free-port":
		err = freePortMain()
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "footprint:", err)
		os.Exit(1)
	}
}

// randomBlock is the source of every payload: record i takes `size` bytes
// from a place that depends on i, so payloads differ and do not compress.
func randomBlock(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return b
}

func kafkaMain(args []string) error {
	fs := flag.NewFlagSet("kafka", flag.ExitOnError)
	brokers := fs.String("brokers", "127.0.0.1:9092", "bootstrap host:port")
	topic := fs.String("topic", "footprint", "topic to create and fill")
	partitions := fs.Int("partitions", 1000, "partitions of the topic")
	records := fs.Int("records", 1_000_000, "records to produce")
	size := fs.Int("size", 100, "bytes of each record's value")
	producers := fs.Int("producers", 4, "clients producing at once (half idempotent, half not; at least 2)")
	linger := fs.Duration("linger", 5*time.Millisecond, "producer linger")
	inflight := fs.Int("inflight", 16, "produce requests in flight per broker, non-idempotent producers (idempotent ones: 5, franz-go's own)")
	buffered := fs.Int("buffered", 200_000, "records one producer buffers before Produce blocks")
	_ = fs.Parse(args)
	if *producers < 2 {
		*producers = 2
	}
	if *records < 0 || *partitions < 1 || *size < 1 {
		return errors.New("bad --records, --partitions or --size")
	}
	ctx := context.Background()

	if err := createTopic(ctx, *brokers, *topic, int32(*partitions)); err != nil {
		return err
	}

	// Record i goes to partition i % P; the idempotent producers take
	// records [0, N/2), the non-idempotent ones [N/2, N), each kind split
	// in contiguous ranges between its producers.
	idem := *producers / 2
	plain := *producers - idem
	half := *records / 2
	type job struct {
		idempotent bool
		from, to   int
	}
	var jobs []job
	split := func(idempotent bool, from, to, n int) {
		for k := 0; k < n; k++ {
			a := from + (to-from)*k/n
			b := from + (to-from)*(k+1)/n
			jobs = append(jobs, job{idempotent, a, b})
		}
	}
	split(true, 0, half, idem)
	split(false, half, *records, plain)

	block := randomBlock(1<<20 + *size)
	var failed atomic.Int64
	var firstErr atomic.Value
	var acked atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, j := range jobs {
		opts := []kgo.Opt{
			kgo.SeedBrokers(*brokers),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(*linger),
			kgo.ProducerBatchMaxBytes(1 << 20),
			kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.MaxBufferedRecords(*buffered),
			kgo.RecordDeliveryTimeout(2 * time.Minute),
		}
		if !j.idempotent {
			opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(*inflight))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func(cl *kgo.Client, j job) {
			defer wg.Done()
			defer cl.Close()
			done := func(_ *kgo.Record, err error) {
				if err != nil {
					if failed.Add(1) == 1 {
						firstErr.Store(err)
					}
					return
				}
				acked.Add(1)
			}
			span := len(block) - *size
			for i := j.from; i < j.to; i++ {
				off := int(uint64(i) * 7919 % uint64(span))
				cl.Produce(ctx, &kgo.Record{Topic: *topic, Partition: int32(i % *partitions), Value: block[off : off+*size]}, done)
			}
			if err := cl.Flush(ctx); err != nil && failed.Add(1) == 1 {
				firstErr.Store(err)
			}
		}(cl, j)
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	fmt.Printf("kafka: %d records of %d bytes over %d partitions, %d idempotent + %d non-idempotent producers, %d acked\n",
		*records, *size, *partitions, idem, plain, acked.Load())
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d records failed; first: %v", n, firstErr.Load())
	}
	fmt.Printf("rate=%.0f records=%d seconds=%.3f\n", float64(*records)/secs, *records, secs)
	return nil
}

// createTopic makes the topic and waits until metadata shows its
// partitions, so the manual partitioner finds every one.
func createTopic(ctx context.Context, brokers, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	r, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err != nil {
		return fmt.Errorf("create topic %s: %w (%s)", topic, err, r.ErrMessage)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		td, err := adm.ListTopics(ctx, topic)
		if err == nil && td.Has(topic) && td[topic].Err == nil && len(td[topic].Partitions) == int(partitions) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s does not show %d partitions: %v", topic, partitions, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func httpMain(args []string) error {
	fs := flag.NewFlagSet("http", flag.ExitOnError)
	base := fs.String("url", "http://127.0.0.1:6632", "the node's HTTP address")
	queue := fs.String("queue", "footprint", "queue to push to")
	partitions := fs.Int("partitions", 4, "partitions of the queue (p0, p1, ...)")
	total := fs.Int("transactions", 1_000_000, "items to push, each with its own transactionId")
	batch := fs.Int("batch", 1000, "items per request")
	concurrency := fs.Int("concurrency", 8, "requests in flight")
	size := fs.Int("size", 100, "bytes of each payload's JSON text (a string)")
	_ = fs.Parse(args)
	if *total < 0 || *batch < 1 || *partitions < 1 || *size < 3 {
		return errors.New("bad --transactions, --batch, --partitions or --size")
	}
	run := make([]byte, 4)
	_, _ = rand.Read(run)
	prefix := "fp-" + hex.EncodeToString(run) + "-"
	// A payload is a JSON string of size-2 hex characters, taken from a
	// random block at a place that depends on the item.
	hexBlock := hex.EncodeToString(randomBlock(1 << 19))
	span := len(hexBlock) - (*size - 2)

	client := &http.Client{
		Timeout:   5 * time.Minute,
		Transport: &http.Transport{MaxIdleConnsPerHost: *concurrency, MaxConnsPerHost: *concurrency},
	}
	url := strings.TrimRight(*base, "/") + "/api/v1/push"
	batches := make(chan int)
	var queued, duplicates atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < *concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var body bytes.Buffer
			for from := range batches {
				if failed.Load() != nil {
					continue
				}
				to := min(from+*batch, *total)
				body.Reset()
				body.WriteString(`{"items":[`)
				for i := from; i < to; i++ {
					if i > from {
						body.WriteByte(',')
					}
					off := int(uint64(i) * 7919 % uint64(span))
					fmt.Fprintf(&body, `{"queue":%q,"partition":"p%d","transactionId":"%s%d","payload":"%s"}`,
						*queue, i%*partitions, prefix, i, hexBlock[off:off+*size-2])
				}
				body.WriteString(`]}`)
				q, d, err := push(client, url, body.Bytes(), to-from)
				if err != nil {
					failed.CompareAndSwap(nil, fmt.Errorf("items %d..%d: %w", from, to, err))
					continue
				}
				queued.Add(int64(q))
				duplicates.Add(int64(d))
			}
		}()
	}
	for from := 0; from < *total; from += *batch {
		batches <- from
	}
	close(batches)
	wg.Wait()
	secs := time.Since(start).Seconds()
	fmt.Printf("http: %d items in requests of %d over %d partitions of %s, %d at once: %d queued, %d duplicate\n",
		*total, *batch, *partitions, *queue, *concurrency, queued.Load(), duplicates.Load())
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	if duplicates.Load() > 0 {
		return fmt.Errorf("%d items answered duplicate though every transactionId differs", duplicates.Load())
	}
	fmt.Printf("rate=%.0f records=%d seconds=%.3f\n", float64(*total)/secs, *total, secs)
	return nil
}

// push sends one body; a 429 or 503 (the node asks to retry) is sent again
// after a pause, a few times. It counts the items answered queued and
// duplicate.
func push(client *http.Client, url string, body []byte, items int) (queued, duplicates int, err error) {
	for attempt := 0; ; attempt++ {
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, 0, err
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, 0, err
		}
		if (resp.StatusCode == 429 || resp.StatusCode == 503) && attempt < 5 {
			time.Sleep(time.Duration(200<<attempt) * time.Millisecond)
			continue
		}
		if resp.StatusCode != 201 {
			return 0, 0, fmt.Errorf("HTTP %d: %.300s", resp.StatusCode, data)
		}
		var results []struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(data, &results); err != nil {
			return 0, 0, fmt.Errorf("answer: %w", err)
		}
		if len(results) != items {
			return 0, 0, fmt.Errorf("%d results for %d items", len(results), items)
		}
		for _, r := range results {
			switch r.Status {
			case "queued":
				queued++
			case "duplicate":
				duplicates++
			default:
				return 0, 0, fmt.Errorf("item status %q", r.Status)
			}
		}
		return queued, duplicates, nil
	}
}

// LMDB's on-disk layout (mdb.c, 64-bit): a page starts with a 16-byte
// header (pgno u64, pad u16, flags u16, lower u16, upper u16); pages 0 and 1
// are meta pages whose MDB_meta follows the header: magic u32, version u32,
// address u64, mapsize u64, dbs[2] (FREE_DBI, MAIN_DBI), last_pg u64,
// txnid u64. An MDB_db is pad u32 (FREE_DBI's holds the page size), flags
// u16, depth u16, then branch, leaf, overflow pages, entries and root, u64
// each: 48 bytes.
const (
	pageHeader  = 16
	metaMagic   = 0xBEEFC0DE
	dbSize      = 48
	nodeSubData = 0x02 // F_SUBDATA: the node's data is a named database's MDB_db
	pageLeaf    = 0x02
)

type mdbDB struct {
	branch, leaf, overflow, entries, root uint64
	depth                                 uint16
}

func readDB(b []byte) mdbDB {
	le := binary.LittleEndian
	return mdbDB{
		depth: le.Uint16(b[6:]), branch: le.Uint64(b[8:]), leaf: le.Uint64(b[16:]),
		overflow: le.Uint64(b[24:]), entries: le.Uint64(b[32:]), root: le.Uint64(b[40:]),
	}
}

// mdbUsedMain prints `used=<bytes> pages=<n> last_page=<n> page_size=<n>`:
// the pages of the free list's tree, the main tree and every named database
// (read from the main tree's one leaf page), against the highest page ever
// used. Pages on the free list are not counted as used.
func mdbUsedMain(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: footprint mdb-used DATA.MDB")
	}
	f, err := os.Open(args[0])
	if err != nil {
		return err
	}
	defer f.Close()
	le := binary.LittleEndian
	head := make([]byte, 4096)
	if _, err := io.ReadFull(f, head); err != nil {
		return err
	}
	if le.Uint32(head[pageHeader:]) != metaMagic {
		return errors.New("not an LMDB file (no meta magic)")
	}
	psize := int64(le.Uint32(head[pageHeader+24:])) // dbs[0].pad
	// The newer of the two meta pages is the one in force.
	var best []byte
	var bestTxn uint64
	for p := int64(0); p < 2; p++ {
		page := make([]byte, psize)
		if _, err := f.ReadAt(page, p*psize); err != nil {
			return err
		}
		txn := le.Uint64(page[pageHeader+24+2*dbSize+8:])
		if best == nil || txn > bestTxn {
			best, bestTxn = page, txn
		}
	}
	m := best[pageHeader:]
	free := readDB(m[24:])
	mainDB := readDB(m[24+dbSize:])
	lastPg := le.Uint64(m[24+2*dbSize:])
	pages := free.branch + free.leaf + free.overflow + mainDB.branch + mainDB.leaf + mainDB.overflow
	if mainDB.entries > 0 {
		if mainDB.depth != 1 {
			return fmt.Errorf("main tree of depth %d: only a one-page main tree is read", mainDB.depth)
		}
		page := make([]byte, psize)
		if _, err := f.ReadAt(page, int64(mainDB.root)*psize); err != nil {
			return err
		}
		if le.Uint16(page[10:])&pageLeaf == 0 {
			return errors.New("main tree's root is not a leaf")
		}
		lower := int(le.Uint16(page[12:]))
		for k := 0; k < (lower-pageHeader)/2; k++ {
			at := int(le.Uint16(page[pageHeader+2*k:]))
			// A leaf node: lo u16, hi u16 (data size), flags u16, ksize u16, key, data.
			flags := le.Uint16(page[at+4:])
			ksize := int(le.Uint16(page[at+6:]))
			if flags&nodeSubData == 0 {
				continue
			}
			db := readDB(page[at+8+ksize:])
			pages += db.branch + db.leaf + db.overflow
		}
	}
	fmt.Printf("used=%d pages=%d last_page=%d page_size=%d\n", int64(pages+2)*psize, pages+2, lastPg, psize)
	return nil
}

func freePortMain() error {
	var b [2]byte
	for try := 0; try < 1000; try++ {
		_, _ = rand.Read(b[:])
		port := 20000 + int(binary.LittleEndian.Uint16(b[:]))%12000
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			l.Close()
			fmt.Println(port)
			return nil
		}
	}
	return errors.New("no free port between 20000 and 32000")
}
